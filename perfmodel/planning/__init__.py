"""Questions asked of the physics: predict one scenario, turn a step into a training run (time, cost, energy),
search layouts, compare systems, what-if hardware, sensitivity and sweeps."""
