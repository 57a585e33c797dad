package agentbridgetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// operation is one control-plane call: its method, path template and success status.
type operation struct {
	Method string
	Path   string
	Status int
}

// operations are the control-plane calls this package makes, by the operation ids of the
// emulator's OpenAPI document; the same as control-plane.json (the package's tests check it).
var operations = map[string]operation{
	"adminCreateSandbox":           {"POST", "/_emulator/sandboxes", 201},
	"adminGetSandbox":              {"GET", "/_emulator/sandboxes/{sandbox_id}", 200},
	"adminDeleteSandbox":           {"DELETE", "/_emulator/sandboxes/{sandbox_id}", 204},
	"adminResetSandbox":            {"POST", "/_emulator/sandboxes/{sandbox_id}/reset", 200},
	"adminSandboxRequests":         {"GET", "/_emulator/sandboxes/{sandbox_id}/requests", 200},
	"adminSandboxHar":              {"GET", "/_emulator/sandboxes/{sandbox_id}/requests.har", 200},
	"adminSandboxUnmatched":        {"GET", "/_emulator/sandboxes/{sandbox_id}/unmatched", 200},
	"adminSandboxClock":            {"POST", "/_emulator/sandboxes/{sandbox_id}/clock", 200},
	"adminSandboxCreateFault":      {"POST", "/_emulator/sandboxes/{sandbox_id}/faults", 201},
	"adminSetSandboxModelScript":   {"PUT", "/_emulator/sandboxes/{sandbox_id}/model-script", 200},
	"adminClearSandboxModelScript": {"DELETE", "/_emulator/sandboxes/{sandbox_id}/model-script", 204},
	"adminSetTier":                 {"POST", "/_emulator/organizations/{organization_id}/tier", 200},
	"adminRecordings":              {"GET", "/_emulator/recordings", 200},
	"adminHealth":                  {"GET", "/_emulator/health", 200},
}

// RecordingHeader picks the recording a replaying emulator answers a request from.
const RecordingHeader = "x-agent-bridge-recording"

// URLEnv names an emulator already running; CommandEnv the command that starts one; TokenEnv the
// control plane's bearer token, when the emulator has one (the variable the emulator itself reads).
const (
	URLEnv     = "AGENT_BRIDGE_URL"
	CommandEnv = "AGENT_BRIDGE_COMMAND"
	TokenEnv   = "EMULATOR_ADMIN_TOKEN"
)

var (
	listening     = regexp.MustCompile(`emulator listening on (http://\S+)`)
	recordingName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._ -]*$`)
)

// ControlPlaneError is a control-plane call that failed: refused (Status), unanswered (Status 0),
// or answered with something the document does not describe.
type ControlPlaneError struct {
	Call   string
	Status int
	Body   string
}

func (e *ControlPlaneError) Error() string {
	body := e.Body
	if len(body) > 500 {
		body = body[:500]
	}
	if e.Status == 0 {
		return fmt.Sprintf("%s failed: %s", e.Call, body)
	}
	return fmt.Sprintf("%s answered %d: %s", e.Call, e.Status, body)
}

// controlPlane calls the control plane by operation id and decodes the answer with its type.
type controlPlane struct {
	url    string
	token  string
	client *http.Client
}

func (c *controlPlane) call(ctx context.Context, id string, params map[string]string, query url.Values, body, out any) error {
	op := operations[id]
	path := op.Path
	for k, v := range params {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	shown := op.Method + " " + path
	target := c.url + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, op.Method, target, reader)
	if err != nil {
		return err
	}
	req.Header.Set("accept", "application/json")
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("authorization", "Bearer "+c.token)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return &ControlPlaneError{Call: shown, Body: fmt.Sprintf("the emulator at %s did not answer: %v", c.url, err)}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return &ControlPlaneError{Call: shown, Status: res.StatusCode, Body: err.Error()}
	}
	if res.StatusCode != op.Status {
		return &ControlPlaneError{Call: shown, Status: res.StatusCode, Body: string(data)}
	}
	if out == nil {
		return nil
	}
	if err := decodeChecked(data, out); err != nil {
		return &ControlPlaneError{Call: shown, Status: res.StatusCode, Body: "the answer is not what the control plane's document says: " + err.Error()}
	}
	return nil
}

// EmulatorOptions says how StartEmulator (and Main) start the emulator.
type EmulatorOptions struct {
	// Command is the agent-bridge command. Default: $AGENT_BRIDGE_COMMAND (split on spaces), else
	// agent-bridge on PATH, else npx agent-bridge.
	Command []string
	// ProvisionMs is how long a new instance stays provisioning (a sandbox's clock moves past it). Default 0.
	ProvisionMs int
	// Seed repeats ids and keys from run to run. Default: random.
	Seed string
	// ModelScript is a model-script file for every instance. Default: none.
	ModelScript string
	// Replay is a folder of recordings to answer from; ReplayMode what a request with none gets.
	Replay     string
	ReplayMode ReplayMode
	// AdminToken is the control plane's bearer token (passed in the environment, not the command line).
	AdminToken string
	// StartTimeout bounds the start. Default 60 s.
	StartTimeout time.Duration
}

// Emulator is an emulator this package started (StartEmulator) or one already running (Connect).
type Emulator struct {
	// URL is its base URL, e.g. http://127.0.0.1:41234.
	URL     string
	control *controlPlane
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	output  []string
}

func newEmulator(base, token string) *Emulator {
	base = strings.TrimRight(base, "/")
	return &Emulator{URL: base, control: &controlPlane{url: base, token: token, client: &http.Client{Timeout: 30 * time.Second}}}
}

// Connect uses the emulator running at base, after checking that it answers.
func Connect(ctx context.Context, base, adminToken string) (*Emulator, error) {
	e := newEmulator(base, adminToken)
	if err := e.control.call(ctx, "adminHealth", nil, nil, nil, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// DefaultCommand is how the emulator is started when EmulatorOptions.Command is empty.
func DefaultCommand() ([]string, error) {
	if configured := strings.Fields(os.Getenv(CommandEnv)); len(configured) > 0 {
		return configured, nil
	}
	if installed, err := exec.LookPath("agent-bridge"); err == nil {
		return []string{installed}, nil
	}
	if npx, err := exec.LookPath("npx"); err == nil {
		return []string{npx, "agent-bridge"}, nil
	}
	return nil, errors.New("agent-bridge is not installed: npm install --save-dev agent-bridge (then it runs as `npx agent-bridge`), or set " + URLEnv + " to an emulator already running, or " + CommandEnv + " to the command that starts one")
}

// StartEmulator starts `agent-bridge emulator` in memory on a free loopback port and returns once
// it listens. Close stops it.
func StartEmulator(ctx context.Context, opts EmulatorOptions) (*Emulator, error) {
	command := opts.Command
	if len(command) == 0 {
		var err error
		if command, err = DefaultCommand(); err != nil {
			return nil, err
		}
	}
	args := append(append([]string{}, command[1:]...), "emulator", "--port", "0", "--in-memory", "--provision-ms", strconv.Itoa(opts.ProvisionMs))
	if opts.Seed != "" {
		args = append(args, "--seed", opts.Seed)
	}
	if opts.ModelScript != "" {
		args = append(args, "--model-script", opts.ModelScript)
	}
	if opts.Replay != "" {
		args = append(args, "--replay", opts.Replay)
	}
	if opts.ReplayMode != "" {
		args = append(args, "--replay-mode", string(opts.ReplayMode))
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", command[0], err)
	}
	shown := strings.Join(append([]string{command[0]}, args...), " ")
	cmd := newCommand(path, args)
	cmd.Env = os.Environ()
	if opts.AdminToken != "" {
		cmd.Env = append(cmd.Env, TokenEnv+"="+opts.AdminToken) // kept out of the process list
	} else {
		opts.AdminToken = os.Getenv(TokenEnv) // the emulator inherits it: the client needs it too
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	e := &Emulator{cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		// Reads every line for as long as it runs, so a full pipe never blocks the emulator.
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			line := scanner.Text()
			e.mu.Lock()
			e.output = append(e.output, line)
			if len(e.output) > 200 {
				e.output = e.output[1:]
			}
			e.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(e.exited)
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case base := <-found:
		started := newEmulator(base, opts.AdminToken)
		e.URL, e.control = started.URL, started.control
		return e, nil
	case <-e.exited:
		return nil, fmt.Errorf("%s exited before listening:\n%s", shown, e.Output())
	case <-timer.C:
	case <-ctx.Done():
	}
	e.kill()
	return nil, fmt.Errorf("%s did not start in time:\n%s", shown, e.Output())
}

// Output is the last lines the emulator this package started printed (empty for one connected to).
func (e *Emulator) Output() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.output, "\n")
}

// Close stops the emulator if this package started it, and what it started (SIGTERM to its
// process group, then SIGKILL after 10 s).
func (e *Emulator) Close() error {
	if e.cmd == nil {
		return nil
	}
	select {
	case <-e.exited:
		return nil
	default:
	}
	if err := signal(e.cmd, syscall.SIGTERM); err != nil {
		e.kill()
		return nil
	}
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		e.kill()
	}
	return nil
}

// kill kills the emulator's process group and waits a bounded time for its output to end: a
// process that left the group could hold it open for ever.
func (e *Emulator) kill() {
	_ = signal(e.cmd, syscall.SIGKILL)
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
	}
}

// SandboxOptions are the sandbox's name, where its clock starts, a fixture to load into it, and
// the recording it replays (which names it).
type SandboxOptions struct {
	Name       string
	ClockStart time.Time
	Fixtures   map[string]any
	Recording  string
}

// NewSandbox creates a sandbox (POST /_emulator/sandboxes); for tests, Start is shorter.
func (e *Emulator) NewSandbox(ctx context.Context, opts SandboxOptions) (*Client, error) {
	body := SandboxCreateRequest{Name: opts.Name, Fixtures: opts.Fixtures}
	if opts.Recording != "" {
		if len(opts.Recording) > 128 || !recordingName.MatchString(opts.Recording) {
			return nil, fmt.Errorf("%q cannot name a recording: letters, digits, '.', '_', '-' and spaces, starting with a letter or digit", opts.Recording)
		}
		body.Name = opts.Recording
	}
	if !opts.ClockStart.IsZero() {
		body.ClockStart = isoTime(opts.ClockStart)
	}
	var created SandboxCreated
	if err := e.control.call(ctx, "adminCreateSandbox", nil, nil, body, &created); err != nil {
		return nil, err
	}
	return &Client{control: e.control, Created: created, URL: e.URL, ID: created.ID, Name: created.Name, APIKey: created.APIKey, OrganizationID: created.OrganizationID, Recording: opts.Recording}, nil
}

// Recordings is how much of each recording this emulator has served (GET /_emulator/recordings).
func (e *Emulator) Recordings(ctx context.Context) (Recordings, error) {
	var out Recordings
	err := e.control.call(ctx, "adminRecordings", nil, nil, nil, &out)
	return out, err
}

// UnusedRecordingsReport names each recording no test used and recorded requests never replayed;
// empty when all were.
func (e *Emulator) UnusedRecordingsReport(ctx context.Context) (string, error) {
	usage, err := e.Recordings(ctx)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, r := range usage.Recordings {
		if r.Interactions > 0 && r.Used == 0 {
			lines = append(lines, fmt.Sprintf("  %s (%s): no test used it", r.Name, r.File))
		} else if len(r.Unused) > 0 {
			numbers := make([]string, len(r.Unused))
			for i, n := range r.Unused {
				numbers[i] = strconv.FormatInt(n, 10)
			}
			lines = append(lines, fmt.Sprintf("  %s (%s): request(s) #%s of %d never replayed", r.Name, r.File, strings.Join(numbers, ", #"), r.Interactions))
		}
	}
	if len(lines) == 0 {
		return "", nil
	}
	return "recordings not used by this run:\n" + strings.Join(lines, "\n") + "\n", nil
}

func isoTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Filter picks requests from a journal: every field set must match (Route is the operation id,
// e.g. createInstance).
type Filter struct {
	Method     string
	Path       string
	Route      string
	Status     int
	InstanceID string
	Session    string
}

// queryNames are the query parameters a Filter sends, each with its value.
func (f Filter) queryNames() map[string]string {
	return map[string]string{"method": f.Method, "path": f.Path, "route": f.Route, "status": strconv.Itoa(f.Status), "instance_id": f.InstanceID, "session": f.Session}
}

func (f Filter) query() url.Values {
	q := url.Values{}
	for k, v := range f.queryNames() {
		if v != "" && (k != "status" || f.Status != 0) {
			q.Set(k, v)
		}
	}
	return q
}

func (f Filter) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	add("method", f.Method)
	add("path", f.Path)
	add("route", f.Route)
	if f.Status != 0 {
		parts = append(parts, fmt.Sprintf("status=%d", f.Status))
	}
	add("instance_id", f.InstanceID)
	add("session", f.Session)
	if len(parts) == 0 {
		return "any request"
	}
	return strings.Join(parts, " ")
}

// Client is a sandbox driven with errors returned (Sandbox, for tests, fails the test instead).
type Client struct {
	control *controlPlane
	// Created is the control plane's answer when the sandbox was made.
	Created SandboxCreated
	// URL is the emulator's base URL; APIKey the organization key of the sandbox's organization.
	URL            string
	ID             string
	Name           string
	APIKey         string
	OrganizationID string
	// Recording is the recording it replays (sent as RecordingHeader), or empty.
	Recording string
}

func (c *Client) params() map[string]string { return map[string]string{"sandbox_id": c.ID} }

// Header is what a request of the code under test carries: the key, and the recording header.
func (c *Client) Header() http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.APIKey)
	if c.Recording != "" {
		h.Set(RecordingHeader, c.Recording)
	}
	return h
}

// InstanceURL is an instance's base URL: an OpenAI client pointed here posts to its /responses.
func (c *Client) InstanceURL(instanceID string) string {
	return c.URL + "/v1/instances/" + url.PathEscape(instanceID)
}

// SessionURL is a named session's base URL, for an OpenAI client.
func (c *Client) SessionURL(instanceID, session string) string {
	return c.InstanceURL(instanceID) + "/session/" + url.PathEscape(session)
}

// Response is an answer of the emulator's /v1 API.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into out.
func (r *Response) JSON(out any) error { return json.Unmarshal(r.Body, out) }

// Do sends a request to the emulator's /v1 API with the sandbox's key (body: nil, or a value sent as JSON).
func (c *Client) Do(ctx context.Context, method, path string, body any, header http.Header) (*Response, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, reader)
	if err != nil {
		return nil, err
	}
	req.Header = c.Header()
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := c.control.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: data}, nil
}

// Requests is what the sandbox received, oldest first.
func (c *Client) Requests(ctx context.Context, f Filter) (SandboxRequests, error) {
	var out SandboxRequests
	err := c.control.call(ctx, "adminSandboxRequests", c.params(), f.query(), nil, &out)
	return out, err
}

// Unmatched is its requests that matched nothing: an unknown route, a wrong method, an unknown key.
func (c *Client) Unmatched(ctx context.Context) ([]UnmatchedRequest, error) {
	var out []UnmatchedRequest
	err := c.control.call(ctx, "adminSandboxUnmatched", c.params(), nil, nil, &out)
	return out, err
}

// HAR is its requests as an HTTP Archive (HAR 1.2), filtered like Requests.
func (c *Client) HAR(ctx context.Context, f Filter) (map[string]any, error) {
	var out map[string]any
	err := c.control.call(ctx, "adminSandboxHar", c.params(), f.query(), nil, &out)
	return out, err
}

// Advance moves its clock forward (whole milliseconds).
func (c *Client) Advance(ctx context.Context, d time.Duration) (ClockMove, error) {
	ms := d.Milliseconds()
	var out ClockMove
	err := c.control.call(ctx, "adminSandboxClock", c.params(), nil, SandboxClockRequest{AdvanceMs: &ms}, &out)
	return out, err
}

// SetClock sets its clock to a later time.
func (c *Client) SetClock(ctx context.Context, to time.Time) (ClockMove, error) {
	var out ClockMove
	err := c.control.call(ctx, "adminSandboxClock", c.params(), nil, SandboxClockRequest{Set: isoTime(to)}, &out)
	return out, err
}

// AddFault adds a fault rule that fires on this sandbox's requests only.
func (c *Client) AddFault(ctx context.Context, rule FaultRuleRequest) (FaultRule, error) {
	var out FaultRule
	err := c.control.call(ctx, "adminSandboxCreateFault", c.params(), nil, rule, &out)
	return out, err
}

// SetModelScript scripts the fake model for its instances ({"rules": [...]}, docs/api-contract.md).
func (c *Client) SetModelScript(ctx context.Context, script any) (ModelScriptView, error) {
	var out ModelScriptView
	err := c.control.call(ctx, "adminSetSandboxModelScript", c.params(), nil, script, &out)
	return out, err
}

// ClearModelScript removes its model script.
func (c *Client) ClearModelScript(ctx context.Context) error {
	return c.control.call(ctx, "adminClearSandboxModelScript", c.params(), nil, nil, nil)
}

// SetTier moves its organization to another plan.
func (c *Client) SetTier(ctx context.Context, tier Tier) error {
	return c.control.call(ctx, "adminSetTier", map[string]string{"organization_id": c.OrganizationID}, nil, TierRequest{Tier: tier}, nil)
}

// Info describes the sandbox.
func (c *Client) Info(ctx context.Context) (SandboxInfo, error) {
	var out SandboxInfo
	err := c.control.call(ctx, "adminGetSandbox", c.params(), nil, nil, &out)
	return out, err
}

// Reset puts it back to how it was created: its instances, journal, faults and clock go; its key stays.
func (c *Client) Reset(ctx context.Context) (SandboxInfo, error) {
	var out SandboxInfo
	err := c.control.call(ctx, "adminResetSandbox", c.params(), nil, nil, &out)
	return out, err
}

// Remove removes the sandbox and everything in it, nothing else.
func (c *Client) Remove(ctx context.Context) error {
	return c.control.call(ctx, "adminDeleteSandbox", c.params(), nil, nil, nil)
}
