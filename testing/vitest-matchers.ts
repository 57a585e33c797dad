/** `setupFiles: ["agent-bridge/testing/vitest/matchers"]`: the matchers on every test file's `expect`. */
import { installMatchers } from "./vitest.js";

installMatchers();
