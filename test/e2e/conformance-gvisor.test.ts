/**
 * The runtime driver conformance suite (test/conformance/suite.ts) against
 * the gVisor driver with the real runsc. Needs root and .state/bin/runsc.
 */
import { gvisorUnavailable, runConformance } from '../conformance/suite';

runConformance('gvisor', { unavailable: gvisorUnavailable() });
