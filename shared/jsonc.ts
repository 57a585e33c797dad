/**
 * Reads JSON with comments and trailing commas (JSONC, as editors write it)
 * with jsonc-parser. Errors say where and what, never the text there: it
 * may hold a secret.
 */
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";

/** The value, or the problems found (each `not valid JSON at line L column C: what`). */
export function readJsonc(text: string): { value: unknown; problems: string[] } {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  return { value, problems: errors.slice(0, 5).map((e) => `not valid JSON at ${lineColumn(text, e.offset)}: ${parseErrorWords(e)}`) };
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  return `line ${line} column ${column}`;
}

const PARSE_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "not a number",
  PropertyNameExpected: "a key in double quotes expected",
  ValueExpected: "a value expected",
  ColonExpected: "a colon expected",
  CommaExpected: "a comma expected",
  CloseBraceExpected: "a closing } expected",
  CloseBracketExpected: "a closing ] expected",
  EndOfFileExpected: "the file should end here",
  InvalidCommentToken: "a comment not closed",
  UnexpectedEndOfComment: "a comment not closed",
  UnexpectedEndOfString: "a string not closed",
  UnexpectedEndOfNumber: "a number cut short",
  InvalidUnicode: "a bad \\u escape",
  InvalidEscapeCharacter: "a bad escape",
  InvalidCharacter: "a character not allowed in a string",
};
const parseErrorWords = (e: ParseError): string => {
  const code = printParseErrorCode(e.error);
  return PARSE_WORDS[code] ?? code;
};
