"""Ray as the multi-node engine: Ray installed beside the server's vLLM (install), a Ray node started,
joined and stopped on this machine (node), and vLLM replicas placed one per Ray node (launch, which
runs under the server's python with Ray)."""
