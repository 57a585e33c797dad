import { createConfig, lintFromString } from "@redocly/openapi-core";
import { buildOpenApiDocument } from "./shared/openapi.ts";
const doc = buildOpenApiDocument({ version: "0.1.0", serverUrl: "http://127.0.0.1:1234" });
const config = await createConfig({ extends: ["recommended"] });
const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/openapi.json", config });
const counts: Record<string, number> = {};
for (const p of problems) { const k = `${p.severity} ${p.ruleId}`; counts[k] = (counts[k] ?? 0) + 1; }
console.log(counts);
for (const p of problems.slice(0, 8)) console.log(p.severity, p.ruleId, p.message, p.location[0]?.pointer);
const strict = await createConfig({ extends: ["recommended-strict"] });
console.log((await lintFromString({ source: JSON.stringify(doc), absoluteRef: "/openapi.json", config: strict })).map(p=>p.ruleId+" "+p.message+" "+p.location[0]?.pointer).slice(0,10));
console.log(Object.keys((doc as any).components.schemas).join(" "));
console.log(JSON.stringify((doc as any).components.schemas.Organization), JSON.stringify((doc as any).paths["/v1/keys"].get.responses));
console.log(JSON.stringify(doc).length);
