#!/usr/bin/env python3
"""Writes tests/data/k8s/minimal-schemas.json: a minimal subset of the
Kubernetes OpenAPI schemas (apps/v1 Deployment, v1 Service and
ServiceAccount, rbac.authorization.k8s.io/v1 Role and RoleBinding), written
down from the Kubernetes API reference for the fields deploy/ uses, with
unknown fields refused so that a misspelt key fails. No cluster and no
network: tests/e2e/test_deploy_manifests.py validates deploy/*.yaml with
it offline (jsonschema)."""
import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests/data/k8s/minimal-schemas.json"


def obj(props, required=(), extra=False):
    d = {"type": "object", "properties": props, "additionalProperties": extra}
    if required:
        d["required"] = list(required)
    return d


S = {"type": "string", "minLength": 1}
I = {"type": "integer"}
B = {"type": "boolean"}
PORT_NAME = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
             "maxLength": 15}
INT_OR_NAME = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 65535},
                         PORT_NAME]}
LABELS = {"type": "object", "additionalProperties": {
    "type": "string", "maxLength": 63,
    "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}}
ANNOTATIONS = {"type": "object", "additionalProperties": {"type": "string"}}
DNS = {"type": "string", "maxLength": 253,
       "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}
META = obj({"name": DNS, "namespace": DNS, "labels": LABELS,
            "annotations": ANNOTATIONS}, ["name"])
TEMPLATE_META = obj({"labels": LABELS, "annotations": ANNOTATIONS}, ["labels"])
QUANTITY = {"anyOf": [
    {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$"},
    {"type": "number"}]}
RESOURCES = obj({"requests": {"type": "object", "additionalProperties": QUANTITY},
                 "limits": {"type": "object", "additionalProperties": QUANTITY}})
HTTP_GET = obj({"path": {"type": "string", "pattern": "^/"}, "port": INT_OR_NAME,
                "scheme": {"enum": ["HTTP", "HTTPS"]}, "host": S}, ["port"])
POS = {"type": "integer", "minimum": 1}
PROBE = obj({"httpGet": HTTP_GET,
             "initialDelaySeconds": {"type": "integer", "minimum": 0},
             "periodSeconds": POS, "timeoutSeconds": POS,
             "failureThreshold": POS, "successThreshold": POS}, ["httpGet"])
KEY_REF = obj({"name": DNS, "key": S, "optional": B}, ["name", "key"])
ENV = obj({"name": S, "value": {"type": "string"},
           "valueFrom": obj({"secretKeyRef": KEY_REF,
                             "configMapKeyRef": KEY_REF})}, ["name"])
CONTAINER_PORT = obj({"name": PORT_NAME,
                      "containerPort": {"type": "integer", "minimum": 1,
                                        "maximum": 65535},
                      "protocol": {"enum": ["TCP", "UDP", "SCTP"]}},
                     ["containerPort"])
MOUNT = obj({"name": DNS, "mountPath": {"type": "string", "pattern": "^/"},
             "readOnly": B, "subPath": {"type": "string"}},
            ["name", "mountPath"])
STRINGS = {"type": "array", "items": {"type": "string"}}
CONTAINER = obj({
    "name": DNS, "image": S,
    "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
    "command": STRINGS, "args": STRINGS,
    "env": {"type": "array", "items": ENV},
    "ports": {"type": "array", "items": CONTAINER_PORT},
    "readinessProbe": PROBE, "livenessProbe": PROBE, "startupProbe": PROBE,
    "resources": RESOURCES,
    "volumeMounts": {"type": "array", "items": MOUNT}}, ["name", "image"])
VOLUME = obj({
    "name": DNS,
    "persistentVolumeClaim": obj({"claimName": DNS, "readOnly": B},
                                 ["claimName"]),
    "emptyDir": obj({"medium": {"type": "string"}, "sizeLimit": QUANTITY}),
    "configMap": obj({"name": DNS}, ["name"]),
    "secret": obj({"secretName": DNS}, ["secretName"])}, ["name"])
POD_SPEC = obj({
    "containers": {"type": "array", "items": CONTAINER, "minItems": 1},
    "volumes": {"type": "array", "items": VOLUME},
    "serviceAccountName": DNS,
    "terminationGracePeriodSeconds": {"type": "integer", "minimum": 0},
    "nodeSelector": LABELS}, ["containers"])
DEPLOYMENT = obj({
    "apiVersion": {"const": "apps/v1"}, "kind": {"const": "Deployment"},
    "metadata": META,
    "spec": obj({"replicas": {"type": "integer", "minimum": 0},
                 "selector": obj({"matchLabels": LABELS}, ["matchLabels"]),
                 "template": obj({"metadata": TEMPLATE_META,
                                  "spec": POD_SPEC}, ["metadata", "spec"]),
                 "strategy": {"type": "object"}},
                ["selector", "template"])},
    ["apiVersion", "kind", "metadata", "spec"])
SERVICE_PORT = obj({"name": {"type": "string"},
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                    "targetPort": INT_OR_NAME,
                    "protocol": {"enum": ["TCP", "UDP", "SCTP"]},
                    "nodePort": I}, ["port"])
SERVICE = obj({
    "apiVersion": {"const": "v1"}, "kind": {"const": "Service"},
    "metadata": META,
    "spec": obj({"type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer",
                                   "ExternalName"]},
                 "clusterIP": {"type": "string"}, "selector": LABELS,
                 "ports": {"type": "array", "items": SERVICE_PORT,
                           "minItems": 1}}, ["ports"])},
    ["apiVersion", "kind", "metadata", "spec"])
SERVICE_ACCOUNT = obj({"apiVersion": {"const": "v1"},
                       "kind": {"const": "ServiceAccount"}, "metadata": META},
                      ["apiVersion", "kind", "metadata"])
RBAC = "rbac.authorization.k8s.io/v1"
RULE = obj({"apiGroups": STRINGS,
            "resources": {"type": "array", "items": S, "minItems": 1},
            "verbs": {"type": "array", "minItems": 1, "items": {"enum": [
                "get", "list", "watch", "create", "update", "patch", "delete",
                "deletecollection", "*"]}}},
           ["apiGroups", "resources", "verbs"])
ROLE = obj({"apiVersion": {"const": RBAC}, "kind": {"const": "Role"},
            "metadata": META, "rules": {"type": "array", "items": RULE}},
           ["apiVersion", "kind", "metadata", "rules"])
SUBJECT = obj({"kind": {"enum": ["ServiceAccount", "User", "Group"]},
               "name": S, "namespace": DNS, "apiGroup": {"type": "string"}},
              ["kind", "name"])
ROLE_BINDING = obj({
    "apiVersion": {"const": RBAC}, "kind": {"const": "RoleBinding"},
    "metadata": META,
    "subjects": {"type": "array", "items": SUBJECT, "minItems": 1},
    "roleRef": obj({"apiGroup": {"const": "rbac.authorization.k8s.io"},
                    "kind": {"enum": ["Role", "ClusterRole"]}, "name": S},
                   ["apiGroup", "kind", "name"])},
    ["apiVersion", "kind", "metadata", "roleRef"])

if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "$comment": "written by scripts/gen_k8s_schemas.py; one JSON Schema "
                    "(draft 2020-12) per kind",
        "kinds": {"Deployment": DEPLOYMENT, "Service": SERVICE,
                  "ServiceAccount": SERVICE_ACCOUNT, "Role": ROLE,
                  "RoleBinding": ROLE_BINDING}}, indent=1, sort_keys=True) + "\n")
