/**
 * The conversations a capture command is asked for: by number (`--conversation N`, numbered as
 * `roce analyze` lists them: 1, 2, … in the order the capture starts them) and by QP (`--qpn`, a
 * conversation with one of these QP numbers at either end). Both given: a conversation must match
 * both. One rule, so that decode, analyze, ladder, plot and replay take the same conversations for
 * the same options.
 */

/** What a command was asked for; null for a part not asked. */
export interface ConversationChoice {
  conversation: number | null;
  qpns: readonly number[] | null;
}

/** The two ends of a conversation as the analysis knows them (a QPN the capture never showed is null). */
export interface ConversationEnds {
  id: number;
  a: { qpn: number | null };
  b: { qpn: number | null };
}

/** Whether the choice asks for anything (without it every conversation is taken). */
export function choosesConversations(choice: ConversationChoice): boolean {
  return choice.conversation !== null || choice.qpns !== null;
}

/** Whether conversation `c` is one the choice asks for. */
export function isChosen(choice: ConversationChoice, c: ConversationEnds): boolean {
  if (choice.conversation !== null && c.id !== choice.conversation) return false;
  if (choice.qpns !== null && !choice.qpns.some((q) => q === c.a.qpn || q === c.b.qpn)) return false;
  return true;
}

/** The ids of the conversations of `all` the choice asks for, in order. */
export function chosenIds(choice: ConversationChoice, all: readonly ConversationEnds[]): number[] {
  return all.filter((c) => isChosen(choice, c)).map((c) => c.id);
}

/** What no conversation of a capture of `count` matched, for a message: `no conversation #3 (the capture has 2)`. */
export function noneChosenText(choice: ConversationChoice, count: number): string {
  const hex = (q: number): string => `0x${q.toString(16)}`;
  const parts: string[] = [];
  if (choice.conversation !== null) parts.push(`#${choice.conversation}`);
  if (choice.qpns !== null) parts.push(`with QP ${choice.qpns.map(hex).join(' or ')} at either end`);
  return `no conversation ${parts.join(' ')} (the capture has ${count === 0 ? 'none' : count})`;
}
