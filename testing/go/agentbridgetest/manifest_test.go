package agentbridgetest

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The package's code states the control plane its manifest states (the agent-bridge repository
// checks the manifest against the emulator's OpenAPI document): the operations it calls, and each
// type's fields.

type manifestOperation struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Status int               `json:"status"`
	Query  map[string]string `json:"query"`
}

type manifest struct {
	Operations map[string]manifestOperation `json:"operations"`
	Schemas    map[string]map[string]string `json:"schemas"`
}

func readManifest(t *testing.T) manifest {
	data, err := os.ReadFile("control-plane.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// notation writes a Go type in the manifest's notation.
func notation(t reflect.Type) string {
	for name, schema := range schemaTypes {
		if schema == t {
			return "#" + name
		}
	}
	if values, ok := enumValues[t]; ok {
		return "enum(" + strings.Join(values, ",") + ")"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return notation(t.Elem())
	case reflect.Interface:
		return "any"
	case reflect.Slice:
		return "array<" + notation(t.Elem()) + ">"
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return "object"
		}
		return "map<" + notation(t.Elem()) + ">"
	case reflect.String:
		return "string"
	case reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	}
	return fmt.Sprintf("(no notation for %s)", t)
}

// fieldsOf writes a struct's fields as the manifest does: "name?" when omitempty, "|null" for a
// pointer that is not.
func fieldsOf(t reflect.Type) map[string]string {
	out := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, optional := jsonField(f)
		text := notation(f.Type)
		if f.Type.Kind() == reflect.Pointer && !optional {
			text += "|null"
		}
		if optional {
			name += "?"
		}
		out[name] = text
	}
	return out
}

func TestTheOperationsItCallsAreTheManifests(t *testing.T) {
	m := readManifest(t)
	if len(m.Operations) != len(operations) {
		t.Errorf("the manifest has %d operations, the package calls %d", len(m.Operations), len(operations))
	}
	for id, op := range m.Operations {
		if got := operations[id]; got != (operation{op.Method, op.Path, op.Status}) {
			t.Errorf("%s: the manifest says %s %s %d, the package %v", id, op.Method, op.Path, op.Status, got)
		}
	}
	var filter []string
	for k := range (Filter{}).queryNames() {
		filter = append(filter, k)
	}
	for _, id := range []string{"adminSandboxRequests", "adminSandboxHar"} {
		var want []string
		for k := range m.Operations[id].Query {
			want = append(want, k)
		}
		sort.Strings(want)
		sort.Strings(filter)
		if !reflect.DeepEqual(want, filter) {
			t.Errorf("%s: the manifest's query is %v, Filter sends %v", id, want, filter)
		}
	}
}

func TestEachTypeHasTheManifestsFieldsAndTypes(t *testing.T) {
	m := readManifest(t)
	if len(m.Schemas) != len(schemaTypes) {
		t.Errorf("the manifest has %d schemas, the package %d", len(m.Schemas), len(schemaTypes))
	}
	for name, fields := range m.Schemas {
		schema, ok := schemaTypes[name]
		if !ok {
			t.Errorf("no type for the manifest's %s", name)
			continue
		}
		if got := fieldsOf(schema); !reflect.DeepEqual(got, fields) {
			t.Errorf("%s (%s):\n package  %v\n manifest %v", name, schema.Name(), got, fields)
		}
	}
}

func TestAnAnswerThatIsNotTheDocumentsIsRefusedNamingTheField(t *testing.T) {
	var info SandboxInfo
	err := decodeChecked([]byte(`{"id":"sbx_1","name":"n","organization_id":"org","organization_ids":[],"instance_count":0,"request_count":0,"created_at":"x"}`), &info)
	if err == nil || err.Error() != "$.clock: missing" {
		t.Errorf("want $.clock: missing, got %v", err)
	}
	var requests SandboxRequests
	err = decodeChecked([]byte(`{"count":1,"requests":[{"seq":1,"at":"a","method":"GET","path":"/","route":null,"status":200,"instance_id":null,"session":null,"key_kind":"admin","body":null,"ms":1,"request_id":"r"}]}`), &requests)
	if err == nil || err.Error() != "$.requests[0].key_kind: admin is not one of org, scoped, none" {
		t.Errorf("want the key_kind refused, got %v", err)
	}
}
