"""Where and how claims run: (claim, seed) tasks, inline or on Ray, with a crash-safe log.

- :mod:`~.tasks`: the plan of a run (one task per seed of a seeded claim, one per other claim),
  running one task, and assembling a claim's result from its tasks;
- :mod:`~.executors`: inline (here, in order) or Ray (a local Ray started on demand, or a
  cluster at an address), with the same results seed by seed;
- :mod:`~.log`: the append-only results log that ``tmath verify --resume`` continues;
- :mod:`~.codec`: the safe, exact JSON that task results travel and rest in;
- :mod:`~.time_split`: where a task's time goes (training, evaluation, the rest);
- :mod:`~.sweep`: ``tmath sweep``, an experiment over a grid of config values and seeds.
"""
