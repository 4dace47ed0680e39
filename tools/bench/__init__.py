"""Helpers of tools/bench_clients.py: one module per client, the shared settings, the report."""
