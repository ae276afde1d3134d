/**
 * The error of a link's configuration: the in-memory link's options and the
 * fault-injection settings (FaultConfig, ROCE_FAULTS) of the memory link and
 * of real drivers. Thrown when the link or injector is set up, never while
 * frames flow.
 */
import { RoceError } from '../base/roce-error';

export const LinkConfigErrorCode = {
  /** A setting is out of range (a probability outside [0, 1], a negative delay), names nothing (an unknown opcode), is not JSON, or cannot apply to this link (a delay on a real link). */
  Invalid: 'ROCE_ERR_LINK_CONFIG',
} as const;
export type LinkConfigErrorCode = (typeof LinkConfigErrorCode)[keyof typeof LinkConfigErrorCode];

export class LinkConfigError extends RoceError<LinkConfigErrorCode> {
  constructor(message: string) {
    super(LinkConfigErrorCode.Invalid, message);
  }
}
