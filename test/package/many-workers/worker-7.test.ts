import { defineWorkerTests } from "./shared-tests.js";

defineWorkerTests(7);
