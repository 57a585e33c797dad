/**
 * An HTTP server for an express app whose requests and responses are express's from birth.
 * Express's `app.handle` re-parents every request and response (`Object.setPrototypeOf` onto
 * `app.request` / `app.response`); V8 then moves each object to a slow shape that every step
 * of node's HTTP code and express's pays for. Made by constructors whose prototypes already are
 * those objects, the re-parenting is a no-op. Nothing else changes: the same app, the same
 * methods, `instanceof IncomingMessage` still true. Measured on the 2-core machine (a fixed
 * JSON, server CPU per request): about 125 us re-parented, 45 us born so.
 */
import { createServer, IncomingMessage, type Server, ServerResponse } from "node:http";
import type { Express } from "express";

export function createExpressServer(app: Express): Server {
  // Function constructors, as node's own are: a `class` could not take an object as its prototype.
  function ExpressRequest(this: IncomingMessage, ...args: ConstructorParameters<typeof IncomingMessage>) {
    Reflect.apply(IncomingMessage, this, args);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: ServerResponse, ...args: ConstructorParameters<typeof ServerResponse>) {
    Reflect.apply(ServerResponse, this, args);
  }
  ExpressResponse.prototype = app.response;
  return createServer(
    {
      IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage,
      ServerResponse: ExpressResponse as unknown as typeof ServerResponse,
    },
    app,
  );
}
