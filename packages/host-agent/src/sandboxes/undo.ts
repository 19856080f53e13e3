/** A cleanup stack: what a step created is undone, in reverse order, when a later step fails. */
export class Undo {
  private readonly steps: Array<() => Promise<unknown>> = [];

  push(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await step().catch(() => undefined);
  }
}
