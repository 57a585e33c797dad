/**
 * Skills from the bundled registry (`configure`). Installing writes
 * `skills/<name>/SKILL.md` and `runtime.json` `skills.entries.<name>`;
 * env values are secrets: the state keeps fingerprints, runtime.json and the
 * answers only `<redacted>`. List and detail read the state in any instance
 * status; install, update and uninstall change the workspace and need the
 * instance `running` (409 otherwise).
 */
import { isoAt } from "../../shared/clock.js";
import type { EmulatorEnv } from "../env.js";
import { notFound } from "../errors.js";
import type { Handlers } from "../http/router.js";
import type { InstanceRecord, SkillRecord } from "../store/state.js";
import { findSkill, REGISTRY_SOURCE, SKILL_REGISTRY, skillMarkdown } from "../skills/registry.js";
import { makeDirectory, removePath, writeText } from "../workspace/files.js";
import { resolveInRoot } from "../workspace/paths.js";
import { fingerprint, REDACTED } from "../workspace/redact.js";
import { objectAt, RUNTIME_CONFIG_FILE, type RuntimeConfig, type RuntimeConfigs } from "../workspace/runtime-config.js";
import { requireRunning } from "../http/guards.js";
import { isReady, missingEnv, runtimeEntry, skillPath } from "../rules/skills.js";

type SkillHandlers = Pick<Handlers, "listSkills" | "getSkill" | "installSkill" | "updateSkill" | "uninstallSkill">;

const entriesOf = (config: RuntimeConfig) => objectAt(objectAt(config, "skills"), "entries");

export function skillHandlers(env: EmulatorEnv, runtime: RuntimeConfigs): SkillHandlers {
  const now = () => isoAt(env.clock.now());
  const installed = (instance: InstanceRecord, name: string): SkillRecord => {
    const record = Object.hasOwn(instance.skills, name) ? instance.skills[name] : undefined;
    if (!record) throw notFound(`Skill '${name}' is not installed on this instance.`);
    return record;
  };
  const view = (name: string, record: SkillRecord | undefined) => {
    const skill = findSkill(name);
    return { name, description: skill?.description ?? "", source: REGISTRY_SOURCE, ready: isReady(skill, record) };
  };

  return {
    listSkills({ instance, query }) {
      const items = SKILL_REGISTRY.map((skill) => view(skill.slug, instance.skills[skill.slug]));
      return query.eligible_only ? items.filter((item) => item.ready) : items;
    },

    getSkill({ instance, params }) {
      const record = installed(instance, params.skill_name);
      return { ...view(params.skill_name, record), path: skillPath(params.skill_name) };
    },

    async installSkill({ instance, body }) {
      requireRunning(instance);
      const skill = findSkill(body.slug);
      if (!skill) throw notFound(`Skill '${body.slug}' is not in the skill registry.`);
      const name = skill.slug;
      const given = body.env ?? {};
      // An empty value sets nothing: the variable stays missing.
      const applied = Object.keys(given).filter((key) => given[key] !== "");
      const at = now();
      const previous = instance.skills[name];
      const record: SkillRecord = {
        enabled: true,
        env: Object.fromEntries(applied.map((key) => [key, fingerprint(given[key]!)])),
        config: {},
        version: skill.version,
        installed_at: at,
        updated_at: at,
      };
      const root = env.workspaces.rootOf(instance.id);
      const folder = await resolveInRoot(root, skillPath(name));
      await makeDirectory(folder);
      await writeText(await resolveInRoot(root, `${skillPath(name)}/SKILL.md`), skillMarkdown(skill), env.workspaces.tempPath());
      try {
        await runtime.update(instance.id, (config) => {
          entriesOf(config)[name] = runtimeEntry(record);
          return () => {
            instance.skills[name] = record;
            instance.updated_at = at;
            env.store.commit();
          };
        });
      } catch (error) {
        // runtime.json refused the change: a first install leaves no folder behind.
        if (!previous) await removePath(folder).catch(() => {});
        throw error;
      }

      const missing = missingEnv(skill, record);
      const output = [
        `Resolving ${name} from the skill registry... found ${name}@${skill.version}`,
        previous ? `Replacing the installed ${name}@${previous.version}` : `Installing ${name}@${skill.version} into ${skillPath(name)}`,
        `  wrote ${skillPath(name)}/SKILL.md`,
        `  updated ${RUNTIME_CONFIG_FILE} (skills.entries.${name})`,
        ...(applied.length ? [`Environment applied: ${applied.join(", ")}`] : []),
        ...(missing.length ? [`Missing environment: ${missing.join(", ")}`] : []),
        `Installed ${name}@${skill.version}${missing.length ? " (not ready: missing environment)" : ""}`,
        "",
      ].join("\n");
      return {
        skill: name,
        status: missing.length ? "installed_missing_env" : "installed",
        output,
        ...(applied.length ? { env_applied: Object.fromEntries(applied.map((key) => [key, REDACTED])) } : {}),
        ...(missing.length ? { required_env: missing } : {}),
        message: missing.length ? `Skill '${name}' installed; set ${missing.join(", ")} to make it ready.` : `Skill '${name}' installed and ready.`,
      };
    },

    async updateSkill({ instance, params, body }) {
      requireRunning(instance);
      const name = params.skill_name;
      installed(instance, name);
      await runtime.update(instance.id, (config) => {
        // Built from the record as it is in this instance's turn, so concurrent updates compose.
        const current = installed(instance, name);
        const next: SkillRecord = { ...current, env: { ...current.env }, updated_at: now() };
        if (body.enabled !== undefined) next.enabled = body.enabled;
        for (const [key, value] of Object.entries(body.env ?? {})) {
          // An empty string removes the variable, as for provider keys.
          if (value === "") delete next.env[key];
          else next.env[key] = fingerprint(value);
        }
        if (body.config !== undefined) next.config = body.config;
        entriesOf(config)[name] = runtimeEntry(next);
        return () => {
          instance.skills[name] = next;
          instance.updated_at = next.updated_at;
          env.store.commit();
        };
      });
    },

    async uninstallSkill({ instance, params }) {
      requireRunning(instance);
      const name = params.skill_name;
      installed(instance, name);
      const folder = await resolveInRoot(env.workspaces.rootOf(instance.id), skillPath(name));
      await removePath(folder).catch((error: unknown) => {
        // Already gone from the disk (deleted through the files API): uninstall the rest.
        if (!(error && typeof error === "object" && "status" in error && error.status === 404)) throw error;
      });
      await runtime.update(instance.id, (config) => {
        delete entriesOf(config)[name];
        return () => {
          delete instance.skills[name];
          instance.updated_at = now();
          env.store.commit();
        };
      });
    },
  };
}
