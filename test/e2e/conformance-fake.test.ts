/**
 * The runtime driver conformance suite (test/conformance/suite.ts) against
 * the fake driver.
 *
 * The fake runs the guest agent as a host process sharing the host's file
 * system and network, so restored copies cannot be isolated from each other
 * (nor carry image state), and its `network: 'none'` is not enforced.
 */
import { runConformance } from '../conformance/suite';

runConformance('fake', { skip: ['restore-isolation', 'network'] });
