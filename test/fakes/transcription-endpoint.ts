/**
 * An OpenAI-compatible `/v1/audio/transcriptions` endpoint as OpenAI documents
 * it (multipart `file` and `model`, optional `language`, `response_format`;
 * `{"text": ...}` back, errors as `{"error": {...}}`), recording what each
 * request carried so a test can check the key, model and language the daemon
 * sent. The answer is the test's to choose per request.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import busboy from "busboy";

export interface TranscriptionRequest {
  authorization: string | undefined;
  fields: Record<string, string>;
  fileName: string;
  mimeType: string;
  data: Buffer;
}

/** What the endpoint does with one request: answer text, an HTTP error, or never answer (until the client leaves). */
export type EndpointAnswer = { text: string } | { status: number } | { hang: true };

export interface FakeTranscriptionEndpoint {
  /** The API base, ending in /v1. */
  url: string;
  requests: TranscriptionRequest[];
  /** Requests whose client left before an answer. */
  abandoned(): number;
  answer: (request: TranscriptionRequest) => EndpointAnswer;
  close(): Promise<void>;
}

function readForm(req: IncomingMessage): Promise<TranscriptionRequest> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let file: { fileName: string; mimeType: string; data: Buffer } | undefined;
    const parser = busboy({ headers: req.headers });
    parser.on("field", (name, value) => (fields[name] = value));
    parser.on("file", (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => (file = { fileName: info.filename ?? "", mimeType: info.mimeType, data: Buffer.concat(chunks) }));
    });
    parser.on("close", () => (file ? resolve({ authorization: req.headers.authorization, fields, ...file }) : reject(new Error("no file part"))));
    parser.on("error", reject);
    req.pipe(parser);
  });
}

export async function createFakeTranscriptionEndpoint(): Promise<FakeTranscriptionEndpoint> {
  let abandoned = 0;
  const endpoint: FakeTranscriptionEndpoint = {
    url: "",
    requests: [],
    abandoned: () => abandoned,
    answer: (request) => ({ text: request.data.toString("utf8") }),
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())),
  };
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/audio/transcriptions") {
      res.writeHead(404).end();
      return;
    }
    readForm(req).then(
      (request) => {
        endpoint.requests.push(request);
        const answer = endpoint.answer(request);
        if ("hang" in answer) {
          res.on("close", () => abandoned++);
          return;
        }
        const [status, body] =
          "status" in answer
            ? [answer.status, { error: { message: "failed", type: "server_error", code: "boom", param: null } }]
            : [200, { text: answer.text }];
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      },
      () => res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "bad form", type: "invalid_request_error" } })),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return endpoint;
}
