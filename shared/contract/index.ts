/**
 * The contract checker: the validating proxy's drift report and the
 * conformance kit both judge servers with it. See validator.ts.
 */
export { DRIFT_KINDS, Drift, DriftKind } from "./drift.js";
export { checkAgainstSchema, describeSchema, describeValue, jsonTypeOf, pathAt, type SchemaDrift } from "./schema-check.js";
export {
  type ContractValidator,
  type ContractValidatorOptions,
  createContractValidator,
  type HeadersInput,
  mediaTypeOf,
  normalizeHeaders,
  OPERATION_METHODS,
  parseEventStream,
  type RequestInput,
  type ResponseInput,
  type ResponseTextInput,
  type RouteMatch,
  type StreamEventInput,
  type StreamInput,
} from "./validator.js";
