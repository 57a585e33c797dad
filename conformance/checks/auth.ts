/** Authentication and the error bodies every route shares: nothing here creates anything. */
import { type Check, expectDetail, expectInvalid, field, jsonObject, skip, that } from "../check.js";

const UNKNOWN_ORG_KEY = `svc_org_${"0".repeat(64)}`;

export const authChecks: readonly Check[] = [
  {
    id: "auth.missing-key",
    title: "A call without Authorization is 401 with a detail sentence",
    async run({ call }) {
      expectDetail(await call("getOrganization", { key: null }), 401);
    },
  },
  {
    id: "auth.not-bearer",
    title: "An Authorization that is not `Bearer <key>` is 401",
    async run({ call }) {
      expectDetail(await call("getOrganization", { authorization: "Basic Y29uZm9ybWFuY2U6eA==" }), 401);
    },
  },
  {
    id: "auth.unknown-key",
    title: "A well-formed key that belongs to nobody is 401",
    async run({ call }) {
      expectDetail(await call("getOrganization", { key: UNKNOWN_ORG_KEY }), 401);
    },
  },
  {
    id: "signup.invalid",
    title: "Signup with an empty name is 422 at body.name, and creates nothing",
    async run({ call }) {
      expectInvalid(await call("signup", { key: null, body: { name: "" } }), ["body", "name"]);
    },
  },
  {
    id: "signup.extra-field",
    title: "A request body with a field the schema does not name is 422 extra_forbidden",
    async run({ call }) {
      const ex = await call("signup", { key: null, body: { name: "conformance", plan: "free" } });
      expectInvalid(ex, ["body"]);
      const issues = field(jsonObject(ex), "detail");
      that(Array.isArray(issues) && issues.some((i) => field(i, "type") === "extra_forbidden"), `422 without an issue of type extra_forbidden: ${ex.text}`);
    },
  },
  {
    id: "signup.not-json",
    title: "A body that is not JSON is 400 with a detail sentence",
    async run({ call }) {
      expectDetail(await call("signup", { key: null, raw: { contentType: "application/json", data: '{"name": ' } }), 400);
    },
  },
  {
    id: "signup.too-large",
    title: "A JSON body over 1 MiB is 413 with a detail sentence",
    async run({ call }) {
      expectDetail(await call("signup", { key: null, body: { name: "x".repeat(1024 * 1024 + 16) } }), 413);
    },
  },
  {
    id: "signup.create",
    title: "Signup answers 201 with a raw organization key (svc_org_ + 64 hex) and the organization",
    async run({ call, run }) {
      // The API has no way to remove an organization: only on request.
      if (!run.allowSignup) return skip("makes an organization the API cannot remove; run with --allow-signup");
      const ex = await call("signup", { key: null, body: { name: `${run.prefix}-signup` } });
      const body = jsonObject(ex);
      that(ex.status === 201, `signup answered ${ex.status}, expected 201`);
      that(/^svc_org_[0-9a-f]{64}$/.test(String(body.api_key)), "api_key is not svc_org_ + 64 lowercase hex");
    },
  },
];
