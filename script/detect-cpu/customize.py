"""detect-cpu: processor (lscpu), memory (/proc/meminfo, dmidecode), storage (lsblk), network cards
(/sys/class/net). A missing or failing tool leaves its keys unset and is reported, never fatal."""
import sys
from mlperf_llm.sysinfo.envmap import host_env
from mlperf_llm.sysinfo.probe import collect


def preprocess(i):
    facts = collect(accelerators=False)
    i['env'].update(host_env(facts))
    gaps = [str(g) for g in facts.gaps]
    i['state']['host_detection_gaps'] = gaps
    for gap in gaps:
        print(f'detect-cpu: not detected: {gap}', file=sys.stderr)
    return {'return': 0}
