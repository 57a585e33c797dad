/** Skills: list, install, read, configure and uninstall one registry skill on the run's instance. */
import { type Check, expectDetail, expectEmpty, expectStatus, field, jsonArray, jsonObject, stringField, that } from "../check.js";

export const skillChecks: readonly Check[] = [
  {
    id: "skills.list",
    title: "GET .../skills lists registry skills; eligible_only=true keeps only ready ones",
    needs: ["running"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const all = await call("listSkills", { params });
      expectStatus(all, 200);
      const names = jsonArray(all).map((s) => stringField(s, "name"));
      that(names.length > 0 && names[0], "the registry lists no skill");
      facts.skill = names[0];
      const ready = await call("listSkills", { params, query: { eligible_only: "true" } });
      expectStatus(ready, 200);
      that(
        jsonArray(ready).every((s) => field(s, "ready") === true),
        "eligible_only=true lists a skill that is not ready",
      );
    },
  },
  {
    id: "skills.install",
    title: "POST .../skills/install installs (installed or installed_missing_env with required_env); an unknown slug is 404",
    needs: ["skill"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId! };
      const ex = await call("installSkill", { params, body: { slug: facts.skill } });
      expectStatus(ex, 200);
      const result = jsonObject(ex);
      that(result.status === "installed" || result.status === "installed_missing_env", `status is ${JSON.stringify(result.status)}`);
      if (result.status === "installed_missing_env") {
        that(Array.isArray(result.required_env) && result.required_env.length > 0, "installed_missing_env without required_env");
      }
      expectDetail(await call("installSkill", { params, body: { slug: "conformance-no-such-skill" } }), 404);
    },
  },
  {
    id: "skills.configure",
    title: "GET .../skills/{name} answers its path; PATCH disables it (204)",
    needs: ["skill"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId!, skill_name: facts.skill! };
      const got = await call("getSkill", { params });
      expectStatus(got, 200);
      that(typeof field(got.json, "path") === "string", "the skill has no path");
      expectEmpty(await call("updateSkill", { params, body: { enabled: false } }));
      const after = await call("getSkill", { params });
      that(field(after.json, "ready") === false, "a disabled skill reads ready");
    },
  },
  {
    id: "skills.uninstall",
    title: "DELETE .../skills/{name} is 204; afterwards the skill is 404",
    needs: ["skill"],
    async run({ call, facts }) {
      const params = { instance_id: facts.instanceId!, skill_name: facts.skill! };
      expectEmpty(await call("uninstallSkill", { params }));
      expectDetail(await call("getSkill", { params }), 404);
    },
  },
];
