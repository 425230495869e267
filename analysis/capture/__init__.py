"""Running a workload under memory pressure inside a memory cgroup and recording it:
the plan, cgroup, sysctls, tracefs instance, monitors and run metadata."""
