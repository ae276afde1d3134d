/**
 * Every verb over the AF_XDP driver between two namespaces (see verbs-suite.ts).
 *
 * @group netns
 */
import { verbsSuite } from './verbs-suite';

verbsSuite('xdp', 'AF_XDP');
