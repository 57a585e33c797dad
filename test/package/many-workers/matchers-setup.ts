import { installMatchers } from "../../../testing/vitest.js";

installMatchers();
