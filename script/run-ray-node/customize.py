"""run-ray-node: start a Ray head or join a cluster as a worker on this node (mlperf_llm.raycluster.node),
or `_stop` a node from its record. Started as a dependency of the server for a run (the dependency
entry sets CM_RAY_STOP_WITH_RUN), the node is stopped when the run ends, unless --keep_server;
started on its own, it runs until `_stop`."""
import os

from cmcontract.yesno import is_yes
from mlperf_llm.raycluster import node
from mlperf_llm.raycluster.placement import RayClusterError


def _int(env, key, what):
    text = (env.get(key) or '').strip()
    if not text:
        return None
    if not text.isdigit():
        raise RayClusterError(f'{what}={text!r} is not a whole number')
    return int(text)


def preprocess(i):
    env = i['env']
    try:
        if env.get('CM_RAY_ACTION') == 'stop':
            if not env.get('CM_RAY_NODE_RECORD'):
                return {'return': 1, 'error': '_stop needs --ray_record=PATH (the ray-node-*.json the start printed)'}
            print(node.stop(node.NodeRecord.load(env['CM_RAY_NODE_RECORD'])))
            return {'return': 0}
        role = node.check_role(env.get('CM_RAY_START', ''))
        if role == 'worker' and not env.get('CM_VLLM_RAY_ADDRESS'):
            return {'return': 1, 'error': '--ray_start=worker needs --ray_address=HOST:PORT (the head\'s)'}
        wait = float(_int(env, 'CM_RAY_WAIT', 'ray_wait') or 120)
        record = node.start(env['CM_VLLM_PYTHON'], env['CM_RAY_PYTHONPATH'], role, os.getcwd(),
                            node_ip=env.get('CM_RAY_NODE_IP', ''),
                            port=_int(env, 'CM_RAY_PORT', 'ray_port') or node.DEFAULT_PORT,
                            address=env.get('CM_VLLM_RAY_ADDRESS', ''),
                            num_cpus=_int(env, 'CM_RAY_NUM_CPUS', 'ray_num_cpus'),
                            usage_stats=is_yes(env.get('CM_VLLM_USAGE_STATS')), wait_s=wait)
        path = os.path.join(os.getcwd(), f'ray-node-{record.role}-{record.node_ip}.json')
        record.save(path)
        env.update(CM_RAY_ADDRESS=record.address, CM_RAY_NODE_RECORD=path, CM_RAY_NODE_STARTED='yes')
        nodes = node.wait_for_nodes(env['CM_VLLM_PYTHON'], env['CM_RAY_PYTHONPATH'], record.address,
                                    _int(env, 'CM_RAY_NODES', 'ray_nodes') or 1, wait)
        env['CM_RAY_CLUSTER_NODES'] = '; '.join(n.describe() for n in nodes)
    except RayClusterError as e:
        if env.get('CM_RAY_NODE_STARTED') == 'yes':
            print(node.stop(node.NodeRecord.load(env['CM_RAY_NODE_RECORD'])))
            env['CM_RAY_NODE_STARTED'] = 'no'
        return {'return': 1, 'error': str(e)}
    print(f'Ray {record.role} on {record.node_ip} in the cluster at {record.address}: {env["CM_RAY_CLUSTER_NODES"]}')
    if not is_yes(env.get('CM_RAY_STOP_WITH_RUN')):
        print(f'it runs until: cm run script --tags=run,ray-node,_stop --ray_record={path}')
    return {'return': 0}


def cleanup(i):
    env = i['env']
    if env.get('CM_RAY_NODE_STARTED') != 'yes' or not is_yes(env.get('CM_RAY_STOP_WITH_RUN')):
        return {'return': 0}
    if is_yes(env.get('CM_VLLM_KEEP_SERVER')):
        print(f'Ray node kept with the server; stop it with cm run script --tags=run,ray-node,_stop '
              f'--ray_record={env["CM_RAY_NODE_RECORD"]}')
        return {'return': 0}
    try:
        print(node.stop(node.NodeRecord.load(env['CM_RAY_NODE_RECORD'])))
    except RayClusterError as e:
        return {'return': 1, 'error': str(e)}
    return {'return': 0}
