"""Everything redline does with a task's env short of stepping it: find the task (``registry``), apply a run's options
to its configs (``prepare``) and check them (``checks``), size the run's memory (``memory``), build the env in the
simulator (``simulator``)."""
