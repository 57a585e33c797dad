/** `globalTeardown: "agent-bridge/testing/jest-global-teardown"`: stops the emulator of the global setup. */
import { jestGlobalTeardown } from "./jest.js";

export default () => jestGlobalTeardown();
