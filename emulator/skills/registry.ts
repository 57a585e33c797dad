/**
 * The skill registry bundled with the emulator: what `skills/install` can
 * install by slug. Each skill names the environment variables it needs; a
 * skill without them installs as `installed_missing_env` and is not ready.
 */

export interface RegistrySkill {
  /** Registry slug, also the installed skill's name and folder (`skills/<slug>`). */
  slug: string;
  description: string;
  version: string;
  /** Variables the skill cannot work without. */
  requiredEnv: readonly string[];
  /** Body of SKILL.md after the front matter: what the agent reads. */
  instructions: string;
}

export const REGISTRY_SOURCE = "registry";

export const SKILL_REGISTRY: readonly RegistrySkill[] = [
  {
    slug: "weather",
    description: "Current conditions and forecasts for any place.",
    version: "1.3.0",
    requiredEnv: ["WEATHER_API_KEY"],
    instructions: "Use when the user asks about the weather. Call the forecast API with the place name; answer in the user's units.",
  },
  {
    slug: "github",
    description: "Read and manage GitHub issues, pull requests and repositories.",
    version: "2.1.4",
    requiredEnv: ["GITHUB_TOKEN"],
    instructions: "Use for anything about GitHub repositories. Prefer reading before writing; never push without being asked.",
  },
  {
    slug: "web-search",
    description: "Search the web and read the top results.",
    version: "1.0.2",
    requiredEnv: ["SEARCH_API_KEY"],
    instructions: "Use when the answer needs fresh information. Cite the pages you used.",
  },
  {
    slug: "notion",
    description: "Search, read and update pages and databases in Notion.",
    version: "0.9.0",
    requiredEnv: ["NOTION_API_KEY"],
    instructions: "Use for the user's notes and databases in Notion. Ask before deleting anything.",
  },
  {
    slug: "calendar",
    description: "List, create and move events in the user's calendar.",
    version: "1.1.0",
    requiredEnv: ["CALENDAR_CLIENT_ID", "CALENDAR_CLIENT_SECRET"],
    instructions: "Use for scheduling. Confirm times in the user's time zone before creating an event.",
  },
  {
    slug: "summarize",
    description: "Summarize long texts, documents and transcripts.",
    version: "1.0.0",
    requiredEnv: [],
    instructions: "Use when asked to shorten or summarize. Keep names, numbers and decisions.",
  },
  {
    slug: "translate",
    description: "Translate text between languages, keeping formatting.",
    version: "1.2.0",
    requiredEnv: [],
    instructions: "Use when asked to translate. Keep Markdown and code blocks as they are.",
  },
  {
    slug: "shell",
    description: "Run shell commands in the instance sandbox.",
    version: "0.4.1",
    requiredEnv: [],
    instructions: "Use to run commands in the workspace. Explain destructive commands before running them.",
  },
  {
    slug: "image-gen",
    description: "Generate images from a text prompt.",
    version: "0.3.0",
    requiredEnv: ["IMAGE_API_KEY"],
    instructions: "Use when the user asks for a picture. Save results under workspace/images/.",
  },
  {
    slug: "todo",
    description: "Keep a to-do list in the workspace.",
    version: "1.0.1",
    requiredEnv: [],
    instructions: "Use for reminders and tasks. The list lives in workspace/todo.md.",
  },
];

const BY_SLUG = new Map(SKILL_REGISTRY.map((skill) => [skill.slug, skill]));

export const findSkill = (slug: string): RegistrySkill | undefined => BY_SLUG.get(slug);

/** The SKILL.md an install writes: YAML front matter, then the instructions. */
export function skillMarkdown(skill: RegistrySkill): string {
  const title = skill.slug
    .split("-")
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(" ");
  return [
    "---",
    `name: ${skill.slug}`,
    `description: ${skill.description}`,
    `version: ${skill.version}`,
    `metadata: ${JSON.stringify({ requires: { env: skill.requiredEnv } })}`,
    "---",
    "",
    `# ${title}`,
    "",
    skill.instructions,
    "",
  ].join("\n");
}
