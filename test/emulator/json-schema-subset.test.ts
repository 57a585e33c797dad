/** The structured-output schema subset: what is refused by name, what is checked, what is made. */
import { describe, expect, it } from "vitest";
import { mismatch, sampleOf, unsupportedIn } from "../../emulator/gateway/script/json-schema.js";

const PERSON = {
  type: "object",
  properties: {
    name: { type: "string" },
    role: { enum: ["admin", "user"] },
    address: { $ref: "#/$defs/Address" },
    nickname: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
  required: ["name", "role", "address", "nickname"],
  additionalProperties: false,
  $defs: { Address: { type: "object", properties: { city: { type: "string" }, zip: { type: "integer", minimum: 1000 } }, required: ["city", "zip"] } },
};

describe("the schema subset", () => {
  it("makes a value every supported schema accepts, the same every time", () => {
    const sample = sampleOf(PERSON);
    expect(sample).toEqual({ name: "name", role: "admin", address: { city: "city", zip: 1000 }, nickname: "nickname" });
    expect(mismatch(PERSON, sample)).toBeNull();
    expect(sampleOf({ type: "array", items: { type: "boolean" } })).toEqual([false]);
  });

  it("says where a value misses the schema", () => {
    expect(mismatch(PERSON, { name: "a", role: "root", address: { city: "x", zip: 1 }, nickname: null })).toBe('$.role: must be one of ["admin","user"]');
    expect(mismatch(PERSON, { name: "a", role: "user", address: { city: "x" }, nickname: null })).toBe("$.address.zip: required property is missing");
    expect(mismatch(PERSON, { name: "a", role: "user", address: { city: "x", zip: 1.5 }, nickname: 3 })).toBe("$.address.zip: expected integer, got number");
    expect(mismatch(PERSON, { name: "a", role: "user", address: { city: "x", zip: 2 }, nickname: null, extra: 1 })).toBe("$.extra: property is not allowed");
  });

  it("names what is outside the subset", () => {
    expect(unsupportedIn(PERSON)).toBeNull();
    expect(unsupportedIn({ type: "object", properties: { a: { type: "string", not: {} } } })).toBe("$.properties.a: keyword 'not' is not supported");
    expect(unsupportedIn({ $ref: "#/$defs/Missing" })).toBe("$.$ref: '#/$defs/Missing' does not name a schema under #/$defs or #/definitions");
    expect(unsupportedIn({ type: "date" })).toBe("$.type: 'date' is not a JSON type");
  });
});
