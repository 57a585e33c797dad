/**
 * For tests of the conformance kit: a throwaway organization on an emulator
 * (over HTTP, as a user would make one), and what the emulator holds
 * afterwards, read through the API and the control plane, to show the kit
 * left nothing behind.
 */
import { z } from "zod";
import { ConsoleState } from "../../shared/schemas/console.js";
import { ScopedKey } from "../../shared/schemas/keys.js";
import { Organization, SignupResponse } from "../../shared/schemas/organization.js";

export interface ThrowawayOrg {
  key: string;
  organization: Organization;
}

const json = async (response: Response, what: string): Promise<unknown> => {
  if (!response.ok) throw new Error(`${what} answered ${response.status}: ${await response.text()}`);
  return response.json();
};

/** Signs up an organization and stores an `anthropic` key, so instances can be made. */
export async function throwawayOrg(baseUrl: string, name = "conformance-target"): Promise<ThrowawayOrg> {
  const signup = SignupResponse.parse(
    await json(
      await fetch(`${baseUrl}/v1/organization/signup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) }),
      "signup",
    ),
  );
  const organization = Organization.parse(
    await json(
      await fetch(`${baseUrl}/v1/organization`, {
        method: "PATCH",
        headers: { "content-type": "application/json", authorization: `Bearer ${signup.api_key}` },
        body: JSON.stringify({ model_api_keys: { anthropic: "anthropic-test-secret-0123456789abcdef" } }),
      }),
      "setting a provider key",
    ),
  );
  return { key: signup.api_key, organization };
}

export interface Leftovers {
  /** The organization as it reads now. */
  organization: Organization;
  /** Non-terminated instances of the organization (the control plane's view: every one, whatever its name). */
  instances: string[];
  /** Scoped keys still active. */
  activeKeys: string[];
}

/** What the organization holds now; a clean run leaves `instances` and `activeKeys` empty and the organization as it was. */
export async function leftovers(baseUrl: string, org: ThrowawayOrg): Promise<Leftovers> {
  const auth = { authorization: `Bearer ${org.key}` };
  const organization = Organization.parse(await json(await fetch(`${baseUrl}/v1/organization`, { headers: auth }), "GET /v1/organization"));
  const keys = z.array(ScopedKey).parse(await json(await fetch(`${baseUrl}/v1/keys`, { headers: auth }), "GET /v1/keys"));
  const state = ConsoleState.parse(await json(await fetch(`${baseUrl}/_emulator/console/state`), "the console state"));
  return {
    organization,
    instances: state.instances.filter((i) => i.organization_id === org.organization.id).map((i) => `${i.name} (${i.status})`),
    activeKeys: keys.filter((k) => k.is_active).map((k) => k.name),
  };
}

/** The organization's fields a run may change and must put back. */
export const restorable = (o: Organization) => ({ name: o.name, model_providers: [...o.model_providers].sort(), instance_count: o.instance_count });
