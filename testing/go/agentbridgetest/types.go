package agentbridgetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// The control plane's bodies and answers, as the emulator's OpenAPI document states them. Each
// type is one schema of control-plane.json (same name, same fields, same types): the package's
// tests check that, and the agent-bridge repository's tests check the manifest against the
// document the emulator serves. A field tagged omitempty is optional; a pointer without omitempty
// may be null. Answers are checked as they are decoded (decodeChecked): a missing required field,
// a null where none belongs or an unknown enum value is an error naming the field.

// KeyKind is the kind of key a request carried.
type KeyKind string

// UnmatchedReason says why a request matched no route.
type UnmatchedReason string

// ClockEventKind is what moving a sandbox's clock made happen.
type ClockEventKind string

// FaultTarget is where a fault rule fires: the /v1 API, an instance's gateway, or provisioning.
type FaultTarget string

// FaultError is a transport failure a fault rule injects instead of a status.
type FaultError string

// Tier is an organization's plan: shrimp allows 1 instance, crab 10, lobster 500.
type Tier string

// ScriptScope is where a model script applies.
type ScriptScope string

// ReplayMode is what a replaying emulator does with a request it has no recording for.
type ReplayMode string

// The values of each enumeration, as the document lists them.
var enumValues = map[reflect.Type][]string{
	reflect.TypeOf(KeyKind("")):         {"org", "scoped", "none"},
	reflect.TypeOf(UnmatchedReason("")): {"unknown_route", "wrong_method", "unknown_key"},
	reflect.TypeOf(ClockEventKind("")):  {"instance_running", "instance_error", "key_expired"},
	reflect.TypeOf(FaultTarget("")):     {"gateway", "api", "provision"},
	reflect.TypeOf(FaultError("")):      {"reset", "timeout"},
	reflect.TypeOf(Tier("")):            {"shrimp", "crab", "lobster"},
	reflect.TypeOf(ScriptScope("")):     {"global", "sandbox", "instance"},
	reflect.TypeOf(ReplayMode("")):      {"strict", "record-if-missing", "passthrough"},
}

// SandboxCreateRequest is the body of POST /_emulator/sandboxes.
type SandboxCreateRequest struct {
	Name       string         `json:"name,omitempty"`
	ClockStart string         `json:"clock_start,omitempty"`
	Fixtures   map[string]any `json:"fixtures,omitempty"`
}

// SandboxClock is where a sandbox's clock is: its now, and how far it is from the emulator's.
type SandboxClock struct {
	Now      string `json:"now"`
	OffsetMs int64  `json:"offset_ms"`
}

// SandboxInfo is a sandbox as GET /_emulator/sandboxes/{id} describes it (the document's Sandbox).
type SandboxInfo struct {
	ID              string       `json:"id"`
	Name            string       `json:"name"`
	OrganizationID  string       `json:"organization_id"`
	OrganizationIDs []string     `json:"organization_ids"`
	InstanceCount   int64        `json:"instance_count"`
	RequestCount    int64        `json:"request_count"`
	Clock           SandboxClock `json:"clock"`
	CreatedAt       string       `json:"created_at"`
}

// SandboxCreated is a new sandbox, with its organization key (answered once).
type SandboxCreated struct {
	ID              string         `json:"id"`
	Name            string         `json:"name"`
	OrganizationID  string         `json:"organization_id"`
	OrganizationIDs []string       `json:"organization_ids"`
	InstanceCount   int64          `json:"instance_count"`
	RequestCount    int64          `json:"request_count"`
	Clock           SandboxClock   `json:"clock"`
	CreatedAt       string         `json:"created_at"`
	APIKey          string         `json:"api_key"`
	Fixture         map[string]any `json:"fixture,omitempty"`
}

// SandboxRequest is one request a sandbox received, as its journal holds it (bodies redacted).
type SandboxRequest struct {
	Seq        int64   `json:"seq"`
	At         string  `json:"at"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Route      *string `json:"route"`
	Status     int64   `json:"status"`
	InstanceID *string `json:"instance_id"`
	Session    *string `json:"session"`
	KeyKind    KeyKind `json:"key_kind"`
	Body       any     `json:"body"`
	Ms         float64 `json:"ms"`
	RequestID  string  `json:"request_id"`
}

// SandboxRequests is a sandbox's journal, filtered and counted.
type SandboxRequests struct {
	Count    int64            `json:"count"`
	Requests []SandboxRequest `json:"requests"`
}

// UnmatchedRequest is a request that matched no route, with the closest one.
type UnmatchedRequest struct {
	At           string          `json:"at"`
	Method       string          `json:"method"`
	Path         string          `json:"path"`
	Reason       UnmatchedReason `json:"reason"`
	ClosestRoute *string         `json:"closest_route"`
	Status       int64           `json:"status"`
}

// SandboxClockRequest moves a sandbox's clock: forward by AdvanceMs, or to Set (ISO 8601, UTC).
type SandboxClockRequest struct {
	AdvanceMs *int64 `json:"advance_ms,omitempty"`
	Set       string `json:"set,omitempty"`
}

// ClockEvent is one thing a clock move made happen.
type ClockEvent struct {
	Kind ClockEventKind `json:"kind"`
	ID   string         `json:"id"`
	At   string         `json:"at"`
}

// ClockMove is where the clock now is, and what moving it made happen (the document's SandboxClockMove).
type ClockMove struct {
	Now      string       `json:"now"`
	OffsetMs int64        `json:"offset_ms"`
	Happened []ClockEvent `json:"happened"`
}

// FaultRuleRequest is a fault rule to add: Target, and what to match and inject.
type FaultRuleRequest struct {
	Target      FaultTarget `json:"target"`
	InstanceID  string      `json:"instance_id,omitempty"`
	Path        string      `json:"path,omitempty"`
	Method      string      `json:"method,omitempty"`
	Status      int64       `json:"status,omitempty"`
	Error       FaultError  `json:"error,omitempty"`
	AfterDeltas *int64      `json:"after_deltas,omitempty"`
	LatencyMs   int64       `json:"latency_ms,omitempty"`
	Probability *float64    `json:"probability,omitempty"`
	Times       int64       `json:"times,omitempty"`
}

// FaultRule is a fault rule as the emulator holds it: Remaining firings (nil: forever), Hits so far.
type FaultRule struct {
	Target      FaultTarget `json:"target"`
	InstanceID  string      `json:"instance_id,omitempty"`
	Path        string      `json:"path,omitempty"`
	Method      string      `json:"method,omitempty"`
	Status      int64       `json:"status,omitempty"`
	Error       FaultError  `json:"error,omitempty"`
	AfterDeltas *int64      `json:"after_deltas,omitempty"`
	LatencyMs   int64       `json:"latency_ms,omitempty"`
	Probability *float64    `json:"probability,omitempty"`
	Times       int64       `json:"times,omitempty"`
	ID          string      `json:"id"`
	Remaining   *int64      `json:"remaining"`
	Hits        int64       `json:"hits"`
}

// ModelScriptView is a model script where it applies, and how often each rule answered.
type ModelScriptView struct {
	Scope      ScriptScope      `json:"scope"`
	InstanceID string           `json:"instance_id,omitempty"`
	SandboxID  string           `json:"sandbox_id,omitempty"`
	Script     *map[string]any  `json:"script"`
	Hits       map[string]int64 `json:"hits"`
}

// TierRequest moves an organization to another plan.
type TierRequest struct {
	Tier Tier `json:"tier"`
}

// RecordingUsage is how much of one recording a replaying emulator has served.
type RecordingUsage struct {
	Name         string  `json:"name"`
	File         string  `json:"file"`
	Interactions int64   `json:"interactions"`
	Used         int64   `json:"used"`
	Unused       []int64 `json:"unused"`
}

// Recordings is every recording of a replaying emulator, with its use.
type Recordings struct {
	Mode       *ReplayMode      `json:"mode"`
	Recordings []RecordingUsage `json:"recordings"`
}

// schemaTypes names each type after its schema in control-plane.json.
var schemaTypes = map[string]reflect.Type{
	"SandboxCreateRequest": reflect.TypeOf(SandboxCreateRequest{}),
	"SandboxClock":         reflect.TypeOf(SandboxClock{}),
	"Sandbox":              reflect.TypeOf(SandboxInfo{}),
	"SandboxCreated":       reflect.TypeOf(SandboxCreated{}),
	"SandboxRequests":      reflect.TypeOf(SandboxRequests{}),
	"SandboxRequest":       reflect.TypeOf(SandboxRequest{}),
	"UnmatchedRequest":     reflect.TypeOf(UnmatchedRequest{}),
	"SandboxClockRequest":  reflect.TypeOf(SandboxClockRequest{}),
	"ClockEvent":           reflect.TypeOf(ClockEvent{}),
	"SandboxClockMove":     reflect.TypeOf(ClockMove{}),
	"FaultRuleRequest":     reflect.TypeOf(FaultRuleRequest{}),
	"FaultRule":            reflect.TypeOf(FaultRule{}),
	"ModelScriptView":      reflect.TypeOf(ModelScriptView{}),
	"TierRequest":          reflect.TypeOf(TierRequest{}),
	"RecordingUsage":       reflect.TypeOf(RecordingUsage{}),
	"Recordings":           reflect.TypeOf(Recordings{}),
}

// jsonField is a struct field's JSON name and whether it may be left out.
func jsonField(f reflect.StructField) (name string, optional bool) {
	tag := f.Tag.Get("json")
	name, rest, _ := strings.Cut(tag, ",")
	return name, strings.Contains(rest, "omitempty")
}

// decodeChecked decodes data into out (a pointer) and checks it against the types' rules: every
// required field present, null only where the type allows it, enum values known. Fields it does
// not know are ignored, so a later emulator that adds one still decodes.
func decodeChecked(data []byte, out any) error {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if err := check(reflect.TypeOf(out).Elem(), raw, "$"); err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

func check(t reflect.Type, value any, where string) error {
	if value == nil {
		if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
			return nil
		}
		return fmt.Errorf("%s: null where the document allows none", where)
	}
	if t.Kind() == reflect.Pointer {
		return check(t.Elem(), value, where)
	}
	if values, ok := enumValues[t]; ok {
		s, isString := value.(string)
		for _, v := range values {
			if isString && s == v {
				return nil
			}
		}
		return fmt.Errorf("%s: %v is not one of %s", where, value, strings.Join(values, ", "))
	}
	switch t.Kind() {
	case reflect.Struct:
		object, ok := value.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object", where)
		}
		for i := 0; i < t.NumField(); i++ {
			name, optional := jsonField(t.Field(i))
			v, present := object[name]
			if !present {
				if optional {
					continue
				}
				return fmt.Errorf("%s.%s: missing", where, name)
			}
			if err := check(t.Field(i).Type, v, where+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice:
		items, ok := value.([]any)
		if !ok {
			return fmt.Errorf("%s: expected an array", where)
		}
		for i, item := range items {
			if err := check(t.Elem(), item, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		object, ok := value.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: expected an object", where)
		}
		for k, v := range object {
			if err := check(t.Elem(), v, where+"."+k); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := value.(string); !ok {
			return fmt.Errorf("%s: expected a string", where)
		}
	case reflect.Int64:
		if n, ok := value.(float64); !ok || n != float64(int64(n)) {
			return fmt.Errorf("%s: expected an integer", where)
		}
	case reflect.Float64:
		if _, ok := value.(float64); !ok {
			return fmt.Errorf("%s: expected a number", where)
		}
	case reflect.Bool:
		if _, ok := value.(bool); !ok {
			return fmt.Errorf("%s: expected true or false", where)
		}
	}
	return nil
}
