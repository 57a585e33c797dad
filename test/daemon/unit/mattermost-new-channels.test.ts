/**
 * Which of the bot's channels a catch-up fetches from its last seen post:
 * those it never knew, posted in after the mark, not archived, the most
 * recently active first and at most the limit.
 */
import { describe, expect, it } from "vitest";
import { channelsToDiscover, type ListedChannel, newestPostAt } from "../../../daemon/adapters/mattermost/new-channels.js";

const channel = (id: string, last_post_at: number, extra: Partial<ListedChannel> = {}): ListedChannel => ({
  id,
  type: "D",
  team_id: "",
  last_post_at,
  delete_at: 0,
  ...extra,
});

describe("channelsToDiscover", () => {
  const listed = [
    channel("old", 900),
    channel("known", 5000),
    channel("new-dm", 2000),
    channel("archived", 3000, { delete_at: 2500 }),
    channel("team", 4000, { type: "O", team_id: "t1" }),
    channel("at-mark", 1000),
  ];

  it("unknown channels posted in after the mark, newest activity first, with their facts", () => {
    const found = channelsToDiscover(listed, (id) => id === "known", 1000, 50);
    expect(found).toEqual([
      { id: "team", facts: { type: "O", teamId: "t1" } },
      { id: "new-dm", facts: { type: "D", teamId: "" } },
    ]);
  });

  it("at most the limit, the most recently active kept", () => {
    expect(channelsToDiscover(listed, () => false, 0, 2).map((c) => c.id)).toEqual(["known", "team"]);
  });

  it("the newest post of all is where a bot that saw nothing starts; no channels, zero", () => {
    expect(newestPostAt(listed)).toBe(5000);
    expect(newestPostAt([])).toBe(0);
  });
});
