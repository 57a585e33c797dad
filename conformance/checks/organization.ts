/** The organization and billing routes; what the run changes on the organization is put back. */
import { PROVIDERS } from "../../shared/schemas/common.js";
import { type Check, expectInvalid, expectStatus, field, jsonObject, skip, stringField, that } from "../check.js";

const providersOf = (org: unknown): string[] => {
  const list = field(org, "model_providers");
  return Array.isArray(list) ? list.filter((p): p is string => typeof p === "string") : [];
};

/** A provider key value the kit stores for a moment and must never see again. */
const DUMMY_PROVIDER_KEY = "conformance-dummy-provider-key-0000";

export const organizationChecks: readonly Check[] = [
  {
    id: "organization.get",
    title: "GET /v1/organization answers the key's organization",
    async run({ call, facts }) {
      const ex = await call("getOrganization");
      expectStatus(ex, 200);
      const org = jsonObject(ex);
      facts.organizationId = stringField(org, "id");
      facts.originalName = stringField(org, "name");
      facts.originalProviders = providersOf(org);
      facts.provider = facts.originalProviders[0];
      that(facts.organizationId && facts.originalName !== undefined, "the organization has no id or name");
    },
  },
  {
    id: "organization.rename",
    title: "PATCH name renames the organization (put back at the end)",
    needs: ["originalName"],
    async run({ call, facts, cleanup, run }) {
      cleanup.restoreName(facts.originalName!);
      const name = `${run.prefix}-org`;
      const ex = await call("updateOrganization", { body: { name } });
      expectStatus(ex, 200);
      that(stringField(jsonObject(ex), "name") === name, `the answer's name is ${JSON.stringify(stringField(ex.json, "name"))}, expected ${name}`);
      const again = await call("getOrganization");
      that(stringField(again.json, "name") === name, "GET /v1/organization does not show the new name");
    },
  },
  {
    id: "organization.invalid-name",
    title: "PATCH with an empty name is 422 at body.name",
    async run({ call }) {
      expectInvalid(await call("updateOrganization", { body: { name: "" } }), ["body", "name"]);
    },
  },
  {
    id: "organization.provider-keys",
    title: "model_api_keys is merged, lists the provider, never returns the key; an empty string removes it",
    needs: ["originalProviders"],
    async run({ call, facts, cleanup }) {
      const provider = PROVIDERS.find((p) => !facts.originalProviders!.includes(p));
      // Adding and removing one it holds would drop the user's real key.
      if (!provider) return skip("the organization holds a key for every provider: none to add and remove");
      cleanup.removeProvider(provider);
      const added = await call("updateOrganization", { body: { model_api_keys: { [provider]: DUMMY_PROVIDER_KEY } } });
      expectStatus(added, 200);
      that(!added.text.includes(DUMMY_PROVIDER_KEY), "the answer quotes the provider key back");
      const listed = providersOf(added.json);
      that(
        listed.includes(provider) && facts.originalProviders!.every((p) => listed.includes(p)),
        `model_providers is ${JSON.stringify(listed)}: expected the earlier ones and ${provider}`,
      );
      const removed = await call("updateOrganization", { body: { model_api_keys: { [provider]: "" } } });
      expectStatus(removed, 200);
      that(!providersOf(removed.json).includes(provider), `${provider} is still listed after removing its key`);
    },
  },
  {
    id: "subscription.get",
    title: "GET /v1/subscription answers the plan and its usage",
    async run({ call }) {
      const ex = await call("getSubscription");
      expectStatus(ex, 200);
      const body = jsonObject(ex);
      that(typeof body.instance_limit === "number" && typeof body.instance_count === "number", "instance_limit or instance_count is not a number");
    },
  },
  {
    id: "subscription.checkout",
    title: "POST /v1/subscription/checkout answers a URL; an unknown tier is 422",
    async run({ call }) {
      const ex = await call("createCheckout", { body: { tier: "lobster" } });
      expectStatus(ex, 200);
      that(URL.canParse(String(field(ex.json, "url"))), "url is not a URL");
      expectInvalid(await call("createCheckout", { body: { tier: "conformance-gold" } }), ["body", "tier"]);
    },
  },
  {
    id: "subscription.portal",
    title: "POST /v1/subscription/portal answers a URL",
    async run({ call }) {
      const ex = await call("createPortal");
      expectStatus(ex, 200);
      that(URL.canParse(String(field(ex.json, "url"))), "url is not a URL");
    },
  },
];
