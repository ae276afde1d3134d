/** Every verb over the AF_PACKET driver between two namespaces (see verbs-suite.ts). */
import { verbsSuite } from './verbs-suite';

verbsSuite('packet', 'AF_PACKET');
