"""Heron's benchmarks: ``python -m bench`` runs them all, ``python -m bench scifact`` one."""
