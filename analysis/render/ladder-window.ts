/**
 * The words a ladder's header says about its window: which frames it shows and
 * why (the whole conversation, an episode, an error frame, its first packets),
 * and how to draw another stretch (roce ladder's --episode, --frames, --from and
 * --to, --max).
 */
import type { Timeline } from '../timeline';
import { RECOVERY_TRIGGER_WORDS } from '../../base/recovery-trigger';

/** Episode ids listed by name at most; the rest are counted. */
const LISTED_EPISODES = 8;

function frameRange(t: Timeline): string {
  const first = t.items[0]?.frame;
  const last = t.items[t.items.length - 1]?.frame;
  if (first === undefined || last === undefined) return 'no frame';
  return first === last ? `frame ${first}` : `frames ${first}-${last}`;
}

/** "frames 2350-2749: around episode #3 (NAK, PSN 1298853), the conversation's first": what is drawn and why. */
export function windowShownText(t: Timeline): string {
  const w = t.window;
  const n = t.items.length;
  const range = frameRange(t);
  switch (w.reason) {
    case 'whole':
      return `${range}: ${w.filtered ? 'every packet of the conversation in the frames or times asked for' : 'the whole conversation'} (${n} packet${n === 1 ? '' : 's'})`;
    case 'episode': {
      const e = w.episode!;
      const what = `episode #${e.id} (${RECOVERY_TRIGGER_WORDS[e.trigger]}, PSN ${e.gapPsn}${e.triggerFrame !== null ? `, trigger frame ${e.triggerFrame}` : ''})`;
      return `${range}: around ${what}${w.asked ? ', as asked' : ", the conversation's first loss-recovery episode"}`;
    }
    case 'error':
      return `${range}: from the conversation's first error frame, ${w.error!.frame} (${w.error!.flag})`;
    case 'start':
      return `${range}: the first ${n} packets${w.filtered ? ' of the frames or times asked for' : ' (no loss-recovery episode or error frame to start at)'}`;
  }
}

/** What is left out and how to draw it: "" when the conversation is drawn whole and has no episode. */
export function windowOthersText(t: Timeline): string {
  return windowOthersParts(t).join('; ');
}

/** windowOthersText's parts, one a line in the SVG's header: what is left out, the other episodes, how to draw any stretch. */
export function windowOthersParts(t: Timeline): string[] {
  const w = t.window;
  const parts: string[] = [];
  const left = w.before + t.truncated;
  if (left > 0) parts.push(`${left} more packet${left === 1 ? '' : 's'} not drawn (${w.before} before, ${t.truncated} after)`);
  const others = w.episodeIds.filter((id) => id !== w.episode?.id);
  if (others.length > 0) {
    const listed = others.slice(0, LISTED_EPISODES).map((id) => `#${id}`);
    const more = others.length > LISTED_EPISODES ? ` and ${others.length - LISTED_EPISODES} more` : '';
    parts.push(`${w.episode === null ? '' : 'other '}episodes of this conversation: ${listed.join(' ')}${more}; draw one with --episode N`);
  }
  if (left > 0) parts.push('any stretch with --frames A-B, --from/--to or --max');
  return parts;
}
