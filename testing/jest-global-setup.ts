/** `globalSetup: "agent-bridge/testing/jest-global-setup"`: one emulator for the run (AGENT_BRIDGE_URL). */
import { jestGlobalSetup } from "./jest.js";

export default () => jestGlobalSetup();
