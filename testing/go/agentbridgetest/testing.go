// Package agentbridgetest gives Go tests the agent-bridge emulator: one emulator for the test
// binary (Main, from TestMain), a sandbox per test (Start, removed with t.Cleanup), and the
// verbs of the JavaScript helpers: script the model, set faults, move the clock, read and assert
// on the requests a test made, replay a recording. Standard library only; Go 1.19 or later.
//
//	func TestMain(m *testing.M) { os.Exit(agentbridgetest.Main(m, agentbridgetest.EmulatorOptions{})) }
//
//	func TestCreatesTheBot(t *testing.T) {
//		t.Parallel()
//		sb := agentbridgetest.Start(t)
//		res := sb.Do("POST", "/v1/instances", map[string]any{"name": "support-bot"})
//		...
//		sb.AssertReceived(agentbridgetest.Filter{Route: "createInstance", Status: 201}, 1)
//	}
package agentbridgetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	sharedMu sync.Mutex
	shared   *Emulator
)

// Main runs the tests of a package (call it from TestMain) with one emulator for all of them:
// the one AGENT_BRIDGE_URL names, else one started with opts and stopped after the tests. With
// opts.Replay, recordings no test used are named on stderr at the end. It returns the exit code.
func Main(m *testing.M, opts EmulatorOptions) int {
	ctx := context.Background()
	if opts.AdminToken == "" {
		opts.AdminToken = os.Getenv(TokenEnv)
	}
	var (
		e   *Emulator
		err error
	)
	if base := os.Getenv(URLEnv); base != "" {
		e, err = Connect(ctx, base, opts.AdminToken)
	} else {
		e, err = StartEmulator(ctx, opts)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentbridgetest: no emulator: %v\n", err)
		return 1
	}
	sharedMu.Lock()
	shared = e
	sharedMu.Unlock()
	code := m.Run()
	if opts.Replay != "" && e.cmd != nil {
		if report, err := e.UnusedRecordingsReport(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "recordings not used by this run: could not ask the emulator (%v)\n", err)
		} else {
			fmt.Fprint(os.Stderr, report)
		}
	}
	_ = e.Close()
	return code
}

// Shared is the emulator Main started or connected to, or one at AGENT_BRIDGE_URL; it fails the
// test when there is neither.
func Shared(t testing.TB) *Emulator {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		return shared
	}
	base := os.Getenv(URLEnv)
	if base == "" {
		t.Fatalf("agentbridgetest: no emulator: call agentbridgetest.Main from TestMain, or set %s", URLEnv)
	}
	e, err := Connect(context.Background(), base, os.Getenv(TokenEnv))
	if err != nil {
		t.Fatalf("agentbridgetest: %v", err)
	}
	shared = e
	return e
}

// Option changes the sandbox Start makes.
type Option func(*startOptions)

type startOptions struct {
	SandboxOptions
	emulator *Emulator
}

// WithName labels the sandbox (default: the test's name).
func WithName(name string) Option { return func(o *startOptions) { o.Name = name } }

// WithClockStart starts its clock at t.
func WithClockStart(t time.Time) Option { return func(o *startOptions) { o.ClockStart = t } }

// WithFixtures loads a fixture's organizations into it (docs/emulator.md, "Fixtures").
func WithFixtures(fixtures map[string]any) Option {
	return func(o *startOptions) { o.Fixtures = fixtures }
}

// WithRecording names the sandbox after a recording: an emulator started with Replay answers its
// requests from <name>.recording.json.
func WithRecording(name string) Option { return func(o *startOptions) { o.Recording = name } }

// WithEmulator makes the sandbox on e instead of the shared emulator.
func WithEmulator(e *Emulator) Option { return func(o *startOptions) { o.emulator = e } }

// Sandbox is one test's sandbox: its own organization and key, clock, fault rules, model script
// and request journal. Its methods fail the test when the control plane refuses; call them from
// the test's goroutine.
type Sandbox struct {
	*Client
	t testing.TB
}

// Start gives the test a sandbox of its own, removed when the test ends (also when it failed).
// Safe in parallel tests: each has its own.
func Start(t testing.TB, opts ...Option) *Sandbox {
	t.Helper()
	o := startOptions{}
	o.Name = t.Name()
	if len(o.Name) > 128 {
		o.Name = o.Name[len(o.Name)-128:]
	}
	for _, opt := range opts {
		opt(&o)
	}
	e := o.emulator
	if e == nil {
		e = Shared(t)
	}
	c, err := e.NewSandbox(context.Background(), o.SandboxOptions)
	if err != nil {
		t.Fatalf("agentbridgetest: %v", err)
	}
	t.Cleanup(func() {
		var gone *ControlPlaneError
		if err := c.Remove(context.Background()); err != nil && !(errors.As(err, &gone) && gone.Status == 404) { // 404: the test removed it
			t.Errorf("agentbridgetest: removing sandbox %s: %v", c.ID, err)
		}
	})
	return &Sandbox{Client: c, t: t}
}

func (s *Sandbox) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("agentbridgetest: %v", err)
	}
}

var background = context.Background()

// Do sends a request to the /v1 API with the sandbox's key; body nil or a value sent as JSON.
func (s *Sandbox) Do(method, path string, body any) *Response {
	s.t.Helper()
	res, err := s.Client.Do(background, method, path, body, nil)
	s.must(err)
	return res
}

// DoWithHeader is Do with extra headers.
func (s *Sandbox) DoWithHeader(method, path string, body any, header http.Header) *Response {
	s.t.Helper()
	res, err := s.Client.Do(background, method, path, body, header)
	s.must(err)
	return res
}

// Requests is what the sandbox received matching f, oldest first.
func (s *Sandbox) Requests(f Filter) []SandboxRequest {
	s.t.Helper()
	out, err := s.Client.Requests(background, f)
	s.must(err)
	return out.Requests
}

// Count is how many requests match f (all it received with an empty Filter).
func (s *Sandbox) Count(f Filter) int {
	s.t.Helper()
	out, err := s.Client.Requests(background, f)
	s.must(err)
	return int(out.Count)
}

// Unmatched is its requests that matched nothing.
func (s *Sandbox) Unmatched() []UnmatchedRequest {
	s.t.Helper()
	out, err := s.Client.Unmatched(background)
	s.must(err)
	return out
}

// HAR is its requests as an HTTP Archive (HAR 1.2).
func (s *Sandbox) HAR(f Filter) map[string]any {
	s.t.Helper()
	out, err := s.Client.HAR(background, f)
	s.must(err)
	return out
}

// Advance moves its clock forward; it returns what the move made happen.
func (s *Sandbox) Advance(d time.Duration) ClockMove {
	s.t.Helper()
	out, err := s.Client.Advance(background, d)
	s.must(err)
	return out
}

// SetClock sets its clock to a later time.
func (s *Sandbox) SetClock(to time.Time) ClockMove {
	s.t.Helper()
	out, err := s.Client.SetClock(background, to)
	s.must(err)
	return out
}

// AddFault adds a fault rule that fires on its requests only.
func (s *Sandbox) AddFault(rule FaultRuleRequest) FaultRule {
	s.t.Helper()
	out, err := s.Client.AddFault(background, rule)
	s.must(err)
	return out
}

// SetModelScript scripts the fake model for its instances.
func (s *Sandbox) SetModelScript(script any) ModelScriptView {
	s.t.Helper()
	out, err := s.Client.SetModelScript(background, script)
	s.must(err)
	return out
}

// ClearModelScript removes its model script.
func (s *Sandbox) ClearModelScript() {
	s.t.Helper()
	s.must(s.Client.ClearModelScript(background))
}

// SetTier moves its organization to another plan (shrimp: 1 instance, crab: 10, lobster: 500).
func (s *Sandbox) SetTier(tier Tier) {
	s.t.Helper()
	s.must(s.Client.SetTier(background, tier))
}

// Info describes the sandbox.
func (s *Sandbox) Info() SandboxInfo {
	s.t.Helper()
	out, err := s.Client.Info(background)
	s.must(err)
	return out
}

// Reset puts it back to how it was created.
func (s *Sandbox) Reset() SandboxInfo {
	s.t.Helper()
	out, err := s.Client.Reset(background)
	s.must(err)
	return out
}

func describeSeen(seen []SandboxRequest) string {
	if len(seen) == 0 {
		return "It received no request."
	}
	start := 0
	if len(seen) > 20 {
		start = len(seen) - 20
	}
	lines := []string{"It received:"}
	for _, r := range seen[start:] {
		line := fmt.Sprintf("  %s %s -> %d", r.Method, r.Path, r.Status)
		if r.Route != nil {
			line += " (" + *r.Route + ")"
		}
		lines = append(lines, line)
	}
	if start > 0 {
		lines = append(lines, fmt.Sprintf("  (and %d earlier)", start))
	}
	return strings.Join(lines, "\n")
}

// ReceivedMessage is why the sandbox's journal does not hold what f (and times, when given)
// asks for; empty when it does. AssertReceived fails the test with it.
func (s *Sandbox) ReceivedMessage(f Filter, times ...int) string {
	s.t.Helper()
	matching := s.Requests(f)
	if len(times) == 0 && len(matching) > 0 || len(times) > 0 && len(matching) == times[0] {
		return ""
	}
	seen := describeSeen(s.Requests(Filter{}))
	if len(times) == 0 {
		return fmt.Sprintf("expected sandbox %s to have received %s. %s", s.ID, f, seen)
	}
	return fmt.Sprintf("expected sandbox %s to have received %s %d time(s), it received it %d time(s). %s", s.ID, f, times[0], len(matching), seen)
}

// AssertReceived fails the test (and returns false) unless a request matching f arrived, exactly
// times[0] of them when given.
func (s *Sandbox) AssertReceived(f Filter, times ...int) bool {
	s.t.Helper()
	if message := s.ReceivedMessage(f, times...); message != "" {
		s.t.Error(message)
		return false
	}
	return true
}

// AssertNoUnmatchedRequests fails the test (and returns false) if a request of the sandbox matched
// nothing, naming each with the closest route.
func (s *Sandbox) AssertNoUnmatchedRequests() bool {
	s.t.Helper()
	unmatched := s.Unmatched()
	if len(unmatched) == 0 {
		return true
	}
	lines := []string{fmt.Sprintf("expected sandbox %s to have no unmatched requests, it has %d:", s.ID, len(unmatched))}
	for _, u := range unmatched {
		line := fmt.Sprintf("  %s %s: %s", u.Method, u.Path, u.Reason)
		if u.ClosestRoute != nil {
			line += " (closest route: " + *u.ClosestRoute + ")"
		}
		lines = append(lines, line)
	}
	s.t.Error(strings.Join(lines, "\n"))
	return false
}
