/**
 * An `InboundSink` for adapter tests that stand without the core: accepts
 * everything (unless told otherwise) and admits attachments up to a size,
 * as the core's intake would with attachments on.
 */
import type { AcceptOutcome, AdmissionAnswer, AdmissionQuestion, AdapterStatusEvent, InboundMessage, InboundSink } from "../../daemon/vocabulary/adapter.js";

export const ACCEPTED: AcceptOutcome = { status: "accepted", acknowledge: true };

export function admitUpTo(maxBytes: number): (question: AdmissionQuestion) => AdmissionAnswer {
  return (question) => ({
    allowed: true,
    attachments: question.attachmentSizes.map((size) =>
      size !== undefined && size > maxBytes ? { fetch: false, reason: "too_large" } : { fetch: true, maxBytes },
    ),
  });
}

export function testSink(options: {
  accept?: (message: InboundMessage) => Promise<AcceptOutcome | void> | AcceptOutcome | void;
  status?: (event: AdapterStatusEvent) => void;
  maxAttachmentBytes?: number;
}): InboundSink {
  return {
    async accept(message) {
      return (await options.accept?.(message)) ?? ACCEPTED;
    },
    admit: admitUpTo(options.maxAttachmentBytes ?? Number.MAX_SAFE_INTEGER),
    status: (event) => options.status?.(event),
  };
}
