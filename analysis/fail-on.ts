/**
 * `roce analyze --fail-on`: what in a capture makes a CI pipeline fail. A list of go-back-N rule
 * IDs (types.ts `RuleId`), expert-flag names (flags.ts `FLAG_NAMES`) and `any`, which stands for
 * every rule. Rules are violations, so `any` covers them all; flags describe events that can be
 * normal (a retransmission, a coalesced ACK), so each flag is named on its own. The `rxe` class
 * (rxe-behaviours.ts: what rxe chooses where IBTA is silent) is not violations either: `any` leaves
 * it out, and `rxe` names every kind of it, or each kind is named on its own.
 */
import { FLAG_NAMES, type FlagName } from './flags';
import { RXE_BEHAVIOUR_IDS, RXE_CLASS, type RxeBehaviourId } from './rxe-behaviours';
import { RuleId } from './types';

export const FAIL_ON_ANY = 'any';
const RULE_IDS: readonly RuleId[] = Object.values(RuleId);

/** The findings that fail a run (`roce analyze --fail-on`): rule ids and expert flags. */
export interface FailOn {
  rules: ReadonlySet<RuleId>;
  flags: ReadonlySet<FlagName>;
  rxe: ReadonlySet<RxeBehaviourId>;
}

/** Parses the names; `unknown` lists those that are neither a rule, a flag nor `any`. */
export function parseFailOn(names: readonly string[]): { failOn: FailOn; unknown: string[] } {
  const rules = new Set<RuleId>();
  const flags = new Set<FlagName>();
  const rxe = new Set<RxeBehaviourId>();
  const unknown: string[] = [];
  for (const raw of names.flatMap((n) => n.split(','))) {
    const n = raw.trim();
    if (n === '') continue;
    if (n === FAIL_ON_ANY) for (const r of RULE_IDS) rules.add(r);
    else if ((RULE_IDS as readonly string[]).includes(n)) rules.add(n as RuleId);
    else if ((FLAG_NAMES as readonly string[]).includes(n)) flags.add(n as FlagName);
    else if (n === RXE_CLASS) for (const b of RXE_BEHAVIOUR_IDS) rxe.add(b);
    else if ((RXE_BEHAVIOUR_IDS as readonly string[]).includes(n)) rxe.add(n as RxeBehaviourId);
    else unknown.push(n);
  }
  return { failOn: { rules, flags, rxe }, unknown };
}

/** The names `--fail-on` accepts, for its usage line and errors. */
export function failOnNames(): string[] {
  return [FAIL_ON_ANY, ...RULE_IDS, ...FLAG_NAMES, RXE_CLASS, ...RXE_BEHAVIOUR_IDS];
}

/** What the capture shows of `failOn`: one line per rule or flag seen, with its count; empty = pass. */
export function failOnFindings(
  failOn: FailOn,
  r: {
    violationsByRule: ReadonlyMap<RuleId, number>;
    flagCounts: Readonly<Record<FlagName, number>>;
    rxeBehavioursById?: Readonly<Record<RxeBehaviourId, number>>;
  },
): string[] {
  const out: string[] = [];
  for (const rule of RULE_IDS) {
    const n = r.violationsByRule.get(rule) ?? 0;
    if (failOn.rules.has(rule) && n > 0) out.push(`rule ${rule}: ${n} violation${n === 1 ? '' : 's'}`);
  }
  for (const flag of FLAG_NAMES) {
    const n = r.flagCounts[flag];
    if (failOn.flags.has(flag) && n > 0) out.push(`flag ${flag}: ${n} frame${n === 1 ? '' : 's'}`);
  }
  for (const b of RXE_BEHAVIOUR_IDS) {
    const n = r.rxeBehavioursById?.[b] ?? 0;
    if (failOn.rxe.has(b) && n > 0) out.push(`rxe ${b}: ${n} time${n === 1 ? '' : 's'}`);
  }
  return out;
}
