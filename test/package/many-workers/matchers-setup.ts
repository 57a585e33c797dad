import { installMatchers } from "agent-bridge/testing/vitest";

installMatchers();
