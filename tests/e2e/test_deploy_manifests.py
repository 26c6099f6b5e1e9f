"""deploy/'s Kubernetes manifests, checked offline (no cluster runs here):
every document against the minimal Kubernetes schemas of
tests/data/k8s/minimal-schemas.json (scripts/gen_k8s_schemas.py; unknown
fields refused), then what makes them work together: the router's
arguments parse with the installed sglang-router, its selector and port
name the nucleus pods, it may read pods, every nucleus option exists, the
probes ask /health, and a pod is given longer to stop than it drains."""

import json
import pathlib
import subprocess

import jsonschema
import pytest
import yaml

from conftest import NUCLEUS_BIN, ROOT

SCHEMAS = json.loads(
    (ROOT / "tests/data/k8s/minimal-schemas.json").read_text())["kinds"]
MANIFESTS = sorted((ROOT / "deploy").glob("*.yaml"))


def documents():
    docs = []
    for path in MANIFESTS:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def find(kind, name):
    for _, d in documents():
        if d["kind"] == kind and d["metadata"]["name"] == name:
            return d
    pytest.fail(f"no {kind} {name} in deploy/")


def arg_value(args, flag):
    return args[args.index(flag) + 1]


def test_manifests_exist():
    assert [p.name for p in MANIFESTS] == ["nucleus.yaml", "router.yaml"]


@pytest.mark.parametrize("name,doc", documents(),
                         ids=lambda v: v if isinstance(v, str) else
                         f"{v['kind']}/{v['metadata']['name']}")
def test_document_matches_schema(name, doc):
    assert doc.get("kind") in SCHEMAS, f"{name}: kind {doc.get('kind')}"
    jsonschema.Draft202012Validator(SCHEMAS[doc["kind"]]).validate(doc)


def test_schema_refuses_a_misspelt_field():
    doc = json.loads(json.dumps(find("Deployment", "nucleus")))
    doc["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMAS["Deployment"]).validate(doc)


def test_deployment_selectors_match_their_pods():
    for _, d in documents():
        if d["kind"] == "Deployment":
            want = d["spec"]["selector"]["matchLabels"]
            have = d["spec"]["template"]["metadata"]["labels"]
            assert want.items() <= have.items(), d["metadata"]["name"]
        if d["kind"] == "Service":
            pods = [x for _, x in documents() if x["kind"] == "Deployment"
                    and d["spec"]["selector"].items() <=
                    x["spec"]["template"]["metadata"]["labels"].items()]
            assert pods, f"Service {d['metadata']['name']} selects no pods"


def test_router_discovers_the_nucleus_pods():
    from sglang_router.launch_router import parse_router_args

    router = find("Deployment", "sglang-router")
    pod = router["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["command"] == ["python3", "-m", "sglang_router.launch_router"]
    parsed = parse_router_args(c["args"])
    assert parsed.service_discovery is True
    assert parsed.policy == "cache_aware"
    nucleus = find("Deployment", "nucleus")
    labels = nucleus["spec"]["template"]["metadata"]["labels"]
    assert parsed.selector.items() <= labels.items()
    assert parsed.service_discovery_namespace == \
        nucleus["metadata"]["namespace"]
    ports = [p["containerPort"] for p in
             nucleus["spec"]["template"]["spec"]["containers"][0]["ports"]]
    assert parsed.service_discovery_port in ports
    serve_args = nucleus["spec"]["template"]["spec"]["containers"][0]["args"]
    assert int(arg_value(serve_args, "--port")) == \
        parsed.service_discovery_port
    # It may watch pods in that namespace.
    sa = pod["serviceAccountName"]
    find("ServiceAccount", sa)
    bindings = [d for _, d in documents() if d["kind"] == "RoleBinding"
                and any(s["kind"] == "ServiceAccount" and s["name"] == sa
                        for s in d["subjects"])]
    assert bindings
    role = find("Role", bindings[0]["roleRef"]["name"])
    assert any("pods" in r["resources"] and
               {"get", "list", "watch"} <= set(r["verbs"])
               for r in role["rules"])


def test_nucleus_pod_serves_what_the_probes_ask():
    nucleus = find("Deployment", "nucleus")
    spec = nucleus["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert c["command"] == ["nucleus"] and c["args"][0] == "serve"
    # Every option is one `nucleus serve` knows.
    usage = subprocess.run([NUCLEUS_BIN, "serve", "--help"],
                           capture_output=True, text=True, check=True).stdout
    for a in c["args"]:
        if a.startswith("--"):
            assert f"  {a} " in usage or f"  {a}\n" in usage, a
    assert arg_value(c["args"], "--host") == "0.0.0.0"
    assert arg_value(c["args"], "--metrics-names") == "llm-d"
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/health"
        assert c[probe]["httpGet"]["port"] in [p["name"] for p in c["ports"]]
    # A pod told to stop drains before the kubelet kills it.
    drain = int(arg_value(c["args"], "--drain-timeout"))
    assert spec["terminationGracePeriodSeconds"] > drain
    model = arg_value(c["args"], "-m")
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    assert any(model.startswith(m + "/") for m in mounts)
