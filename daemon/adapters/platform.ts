/**
 * What a chat platform tells the rest of the daemon about itself, in one
 * small descriptor (`daemon/adapters/<platform>/platform.ts`): its channel
 * config schema, the defaults it fills once the channel's id is known, the
 * secrets a channel holds, the libraries it loads, how its user ids are
 * spelled, the `agent-bridge check` probe, and a lazy `create` that imports
 * the heavy adapter module only when a channel of the platform is enabled.
 * The registry (registry.ts) lists the descriptors; config, secret
 * scrubbing, access, check and buildAdapters go through it, so adding a
 * platform touches its own folder and one registry line
 * (docs/architecture.md, "Adding a platform").
 */
import type { Readable, Writable } from "node:stream";
import type { z } from "zod";
import type { ProbeDeps } from "../helpers/probe.js";
import type { CheckResult } from "../vocabulary/check-result.js";
import type { AdapterDeps, ChatAdapter, InboundMessage } from "../vocabulary/adapter.js";
import { isModuleNotFound } from "../../shared/util/module-not-found.js";

/** A channel as its schema parses it, before the daemon fills in the id. */
export interface ParsedChannel {
  type: string;
  id?: string | undefined;
  enabled: boolean;
}

/** A channel once finalised: every channel has its account id. */
export interface FinalChannel {
  type: string;
  id: string;
  enabled: boolean;
}

export interface FinalizeContext {
  /** The channel's account id (its `id`, or the type when none is given). */
  id: string;
  /** The daemon's data folder, for per-channel state paths. */
  dataDir: string;
}

export interface ChannelCheckDeps extends ProbeDeps {
  /** Reads a file as UTF-8; rejects with an ErrnoException when it is missing. */
  readFile(path: string): Promise<string>;
  /**
   * Several machines: a credential record the state backend keeps for the channel's account
   * (`AdapterDeps.credentials`), undefined when there is none. Absent: credentials are files.
   */
  storedCredential?(channel: { type: string; id: string }, type: string, id: string): Promise<unknown>;
}

export interface PlatformDeps extends AdapterDeps {
  /** The process's own streams, for a platform that talks through them (default stdin/stdout). */
  stdin?: Readable;
  stdout?: Writable;
}

/** Several machines: what a node that may not own the account needs to receive its events. */
export interface ReceiverDeps {
  logger: import("pino").Logger;
  clock: import("../../shared/clock.js").Clock;
  /** Keeps one event for the account's owner (a repeated key is one event); resolves once it is durable. */
  keep(key: string, body: unknown): Promise<void>;
  /** The state backend's store of reply files served by link: a channel's endpoint on every node serves its links. */
  fileStores?: import("../vocabulary/file-store.js").FileStoreBackend;
}

/** A receiver every node runs for one channel, whoever owns the account. */
export interface Receiver {
  close(): Promise<void>;
}

/** The libraries a platform loads: package name to the range package.json gives it (as an optional peer dependency). */
export type PlatformLibraries = Readonly<Record<string, string>>;

/** How a platform's user ids are spelled, so an id in the config matches the one a message brings. */
export interface UserIdRules {
  /**
   * One spelling per person for the ids this platform recognises as its own
   * (a suffix only it uses, a device part); any other id is returned as it
   * came. Applied before the common rule (trimmed; a phone number written
   * with `+` or spaces becomes its digits; no whitespace).
   */
  normalize(id: string): string;
}

/** A conversation as the core names it, without a message: a schedule's chat and thread. */
export type NamedPlace = Pick<InboundMessage, "chatId" | "chatType"> & { threadId?: string | undefined };

/** One platform, as its folder writes it: every function sees only its own channels, precisely typed. */
export interface PlatformSpec<T extends string, S extends z.ZodType<ParsedChannel & { type: T }>, C extends FinalChannel & { type: T }> {
  /** The channel `type` in the config. */
  type: T;
  /** How a person names the platform (`--help`, the console): "Telegram", "WhatsApp". */
  name: string;
  /** The libraries the adapter module imports (a test keeps them equal to package.json's optional peer dependencies). Default none. */
  libraries?: PlatformLibraries;
  /** Its user ids' own spellings (default: none beyond the common rule). */
  users?: UserIdRules;
  /** HTTP headers the platform sends that carry a secret: redacted wherever a logged request shows them. */
  secretHeaders?: readonly string[];
  /** The account belongs to this machine and cannot move between the nodes of a bridge on several machines (default false). */
  machineBound?: boolean;
  /**
   * How the platform named `place` before the one thread rule, as its messages say in `formerly`
   * (derived by the same code, imported when asked: the descriptor loads with the config), so a
   * conversation the core opens with no message (a schedule's) moves its stored session like the
   * thread's next message would. Absent: names never changed.
   */
  formerPlaceOf?(place: NamedPlace): Promise<InboundMessage["formerly"]>;
  /** The channel's config schema (a strict object with `type: z.literal(type)`, `...channelCommon`). */
  schema: S;
  /** Per-channel defaults that need the id or the data folder; must set `id`. */
  finalize(channel: z.output<S>, context: FinalizeContext): C;
  /** Everything in the channel that must never appear in logs or output (tokens, webhook secrets). */
  secrets(channel: C): string[];
  /** `agent-bridge check`: is the channel ready (token accepted, phone linked)? Never reports a secret. */
  check(channel: C, deps: ChannelCheckDeps): Promise<CheckResult>;
  /**
   * Imports the adapter module (and with it the platform library) without building an adapter:
   * a node of several does it before it may own an account, since importing a library such as
   * discord.js holds the event loop for as long as a short lease may go unrenewed.
   */
  load(): Promise<unknown>;
  /**
   * Several machines: for a platform that posts events to any node (Slack's HTTP Events API),
   * the receiver each node runs for the channel; its events reach the owner's adapter as
   * `AdapterDeps.inbox`. Undefined (or absent): only the owner receives.
   */
  receive?(channel: C, deps: ReceiverDeps): Promise<Receiver> | undefined;
  /** Builds the adapter; dynamic-imports the platform library so unused platforms are never loaded. */
  create(channel: C, deps: PlatformDeps): Promise<ChatAdapter>;
}

/**
 * A platform as the registry holds it. Each entry point takes any channel and
 * answers `undefined` for another platform's, so callers dispatch by asking
 * each platform in turn, with no per-type switch outside the platform.
 */
export interface Platform<
  T extends string = string,
  S extends z.ZodType<ParsedChannel & { type: T }> = z.ZodType<ParsedChannel & { type: T }>,
  C extends FinalChannel & { type: T } = FinalChannel & { type: T },
> {
  readonly type: T;
  readonly name: string;
  readonly libraries: PlatformLibraries;
  readonly users: UserIdRules;
  readonly secretHeaders: readonly string[];
  readonly machineBound: boolean;
  readonly schema: S;
  /** `PlatformSpec.formerPlaceOf`; undefined where the platform never renamed it. */
  formerPlaceOf(place: NamedPlace): Promise<InboundMessage["formerly"]>;
  finalize(channel: ParsedChannel, context: FinalizeContext): C | undefined;
  secrets(channel: FinalChannel): string[] | undefined;
  check(channel: FinalChannel, deps: ChannelCheckDeps): Promise<CheckResult> | undefined;
  load(channel: FinalChannel): Promise<unknown> | undefined;
  create(channel: FinalChannel, deps: PlatformDeps): Promise<ChatAdapter> | undefined;
  receive(channel: FinalChannel, deps: ReceiverDeps): Promise<Receiver> | undefined;
}

export function definePlatform<T extends string, S extends z.ZodType<ParsedChannel & { type: T }>, C extends FinalChannel & { type: T }>(
  spec: PlatformSpec<T, S, C>,
): Platform<T, S, C> {
  // The schema's `type` literal is the discriminant: a channel with this type was parsed by this schema.
  const parsedHere = (channel: ParsedChannel): channel is z.output<S> => channel.type === spec.type;
  const finalHere = (channel: FinalChannel): channel is C => channel.type === spec.type;
  return {
    type: spec.type,
    name: spec.name,
    libraries: spec.libraries ?? {},
    users: spec.users ?? { normalize: (id) => id },
    secretHeaders: spec.secretHeaders ?? [],
    machineBound: spec.machineBound ?? false,
    schema: spec.schema,
    formerPlaceOf: async (place) => spec.formerPlaceOf?.(place),
    finalize: (channel, context) => (parsedHere(channel) ? spec.finalize(channel, context) : undefined),
    secrets: (channel) => (finalHere(channel) ? spec.secrets(channel) : undefined),
    check: (channel, deps) => (finalHere(channel) ? spec.check(channel, deps) : undefined),
    load: (channel) => (finalHere(channel) ? spec.load() : undefined),
    create: (channel, deps) => (finalHere(channel) ? spec.create(channel, deps) : undefined),
    receive: (channel, deps) => (finalHere(channel) ? spec.receive?.(channel, deps) : undefined),
  };
}

/**
 * The platform libraries are optional peer dependencies (installing the
 * package for its emulator or client must not bring in ~55 MB of them):
 * each descriptor names its `libraries` with the ranges package.json gives
 * them, for the sentence a person gets when one is missing.
 */
interface LibraryOwner {
  readonly type: string;
  readonly libraries: PlatformLibraries;
}

/** `npm install a@"range" b@"range"`: every library the platform needs, so one command fixes it. */
const installCommand = (platform: LibraryOwner): string =>
  `npm install ${Object.entries(platform.libraries)
    .map(([library, range]) => `${library}@"${range}"`)
    .join(" ")}`;

/** Thrown when a channel's platform library is not installed: says what to install. */
export class PlatformLibraryMissingError extends Error {
  override readonly name = "PlatformLibraryMissingError";
  readonly platform: string;
  constructor(
    owner: LibraryOwner,
    readonly library: string,
  ) {
    super(`The ${owner.type} channel needs the ${library} package, an optional dependency of agent-bridge: ${installCommand(owner)}`);
    this.platform = owner.type;
  }
}

/** Loads a platform's adapter module; a missing platform library becomes a {@link PlatformLibraryMissingError}. */
export async function loadAdapterModule<M>(platform: LibraryOwner, load: () => Promise<M>): Promise<M> {
  try {
    return await load();
  } catch (error) {
    const library = Object.keys(platform.libraries).find((name) => isModuleNotFound(error, name));
    if (library !== undefined) throw new PlatformLibraryMissingError(platform, library);
    throw error;
  }
}
