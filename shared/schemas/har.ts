/**
 * HTTP Archive (HAR) 1.2, as http://www.softwareishard.com/blog/har-12-spec/
 * defines it: what the emulator exports of a sandbox's request journal.
 * Required fields as the spec requires them; objects open, since HAR allows
 * custom fields (named with a leading `_`).
 */
import { z } from "zod";

const NameValue = z.looseObject({ name: z.string(), value: z.string(), comment: z.string().optional() });

export const HarPostData = z.looseObject({
  mimeType: z.string(),
  text: z.string().optional(),
  params: z.array(z.looseObject({ name: z.string(), value: z.string().optional() })).optional(),
  comment: z.string().optional(),
});

export const HarRequest = z.looseObject({
  method: z.string(),
  url: z.string(),
  httpVersion: z.string(),
  cookies: z.array(NameValue),
  headers: z.array(NameValue),
  queryString: z.array(NameValue),
  postData: HarPostData.optional(),
  /** -1 when unknown. */
  headersSize: z.number().int(),
  bodySize: z.number().int(),
  comment: z.string().optional(),
});

export const HarResponse = z.looseObject({
  status: z.number().int(),
  statusText: z.string(),
  httpVersion: z.string(),
  cookies: z.array(NameValue),
  headers: z.array(NameValue),
  content: z.looseObject({
    size: z.number().int(),
    mimeType: z.string(),
    text: z.string().optional(),
    encoding: z.string().optional(),
    comment: z.string().optional(),
  }),
  redirectURL: z.string(),
  headersSize: z.number().int(),
  bodySize: z.number().int(),
  comment: z.string().optional(),
});

export const HarTimings = z.looseObject({
  blocked: z.number().min(-1).optional(),
  dns: z.number().min(-1).optional(),
  connect: z.number().min(-1).optional(),
  send: z.number().min(-1),
  wait: z.number().min(-1),
  receive: z.number().min(-1),
  ssl: z.number().min(-1).optional(),
  comment: z.string().optional(),
});

export const HarEntry = z.looseObject({
  pageref: z.string().optional(),
  startedDateTime: z.iso.datetime({ offset: true }),
  /** Milliseconds, the sum of the timings (-1 ones left out). */
  time: z.number().min(0),
  request: HarRequest,
  response: HarResponse,
  cache: z.looseObject({}),
  timings: HarTimings,
  serverIPAddress: z.string().optional(),
  connection: z.string().optional(),
  comment: z.string().optional(),
});

export const Har = z.object({
  log: z.looseObject({
    version: z.literal("1.2"),
    creator: z.looseObject({ name: z.string(), version: z.string(), comment: z.string().optional() }),
    browser: z.looseObject({ name: z.string(), version: z.string() }).optional(),
    pages: z.array(z.looseObject({ startedDateTime: z.string(), id: z.string(), title: z.string(), pageTimings: z.looseObject({}) })).optional(),
    entries: z.array(HarEntry),
    comment: z.string().optional(),
  }),
});
export type Har = z.output<typeof Har>;
export type HarEntry = z.output<typeof HarEntry>;
