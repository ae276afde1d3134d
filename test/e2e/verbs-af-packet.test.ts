/**
 * Every verb over the AF_PACKET driver between two namespaces (see verbs-suite.ts).
 *
 * @group netns
 */
import { verbsSuite } from './verbs-suite';

verbsSuite('packet', 'AF_PACKET');
