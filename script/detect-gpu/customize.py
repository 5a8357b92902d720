"""detect-gpu: NVIDIA through nvidia-smi, AMD through amd-smi/rocm-smi. No vendor tool means no
accelerator (CM_GPU_VENDOR=none, CM_GPU_COUNT=0); a tool that fails gives CM_GPU_VENDOR=unknown and
the reason, and `--env.CM_GPU_REQUIRED=yes` turns either into an error."""
import sys

from cmcontract.yesno import is_yes
from mlperf_llm.sysinfo.envmap import gpu_env
from mlperf_llm.sysinfo.probe import SystemFacts, detect_accelerators, run_command


def preprocess(i):
    env = i['env']
    facts = SystemFacts()
    detect_accelerators(run_command, facts)
    env.update(gpu_env(facts.accelerators))
    gaps = [str(g) for g in facts.gaps]
    i['state']['gpu_detection_gaps'] = gaps
    for gap in gaps:
        print(f'detect-gpu: not detected: {gap}', file=sys.stderr)
    if is_yes(env.get('CM_GPU_REQUIRED')) and env.get('CM_GPU_COUNT', '') in ('', '0'):
        why = '; '.join(gaps) or 'no nvidia-smi, amd-smi or rocm-smi on PATH'
        return {'return': 1, 'error': f'an accelerator is required (CM_GPU_REQUIRED=yes) but none was '
                f'detected: {why}. Install the vendor driver tools, or drop --env.CM_GPU_REQUIRED'}
    return {'return': 0}
