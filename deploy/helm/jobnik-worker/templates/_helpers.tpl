{{/* Names, labels and the per-stage-type settings shared by the templates. */}}

{{- define "jobnik-worker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The base name of every object: the release name, followed by the chart's name
unless the release name already contains it (`helm install jobnik-worker ...`
gives plain "jobnik-worker").
*/}}
{{- define "jobnik-worker.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "jobnik-worker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jobnik-worker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobnik-worker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "jobnik-worker.labels" -}}
helm.sh/chart: {{ include "jobnik-worker.chart" . }}
{{ include "jobnik-worker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jobnik
{{- end }}

{{/* True (non-empty) when the workers are given an AMQP URL. */}}
{{- define "jobnik-worker.amqpEnabled" -}}
{{- if or .Values.amqp.url .Values.amqp.existingSecret }}true{{ end }}
{{- end }}

{{/* The Secret the chart creates for amqp.url. */}}
{{- define "jobnik-worker.amqpSecretName" -}}
{{- printf "%s-amqp" (include "jobnik-worker.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The secretKeyRef (name and key) of the AMQP URL. */}}
{{- define "jobnik-worker.amqpUrlRef" -}}
{{- if .Values.amqp.existingSecret }}
name: {{ .Values.amqp.existingSecret }}
key: {{ .Values.amqp.existingSecretKey }}
{{- else }}
name: {{ include "jobnik-worker.amqpSecretName" . }}
key: amqp-url
{{- end }}
{{- end }}

{{/* The TriggerAuthentication the ScaledObjects refer to. */}}
{{- define "jobnik-worker.triggerAuthName" -}}
{{- if .Values.keda.triggerAuthentication.name }}
{{- .Values.keda.triggerAuthentication.name }}
{{- else }}
{{- printf "%s-rabbitmq" (include "jobnik-worker.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
The effective settings of one stageTypes entry, as YAML: `defaults`, each key
replaced by the entry's own when it has one (so an entry's `replicas: 0` or
`minReplicaCount: 0` holds), plus
  stageType      the stage type
  resourceName   the Deployment's (and ScaledObject's) name
  queueName      the RabbitMQ queue the worker declares: jobnik.tasks.<stageType>
  image          `image` with the entry's image keys over it
  env            defaults.env followed by the entry's env
  keda           keda.defaults with the entry's keda keys over it, and
                 `enabled`: keda.enabled and not the entry's keda.enabled false
Call with (dict "root" $ "stage" <entry>); read with fromYaml.
*/}}
{{- define "jobnik-worker.stage" -}}
{{- $root := .root }}
{{- $stage := .stage }}
{{- if not (kindIs "map" $stage) }}
{{- fail "each stageTypes entry must be a map with at least `name` (the stage type)" }}
{{- end }}
{{- $type := required "each stageTypes entry needs `name`: the stage type" $stage.name | toString }}
{{- if contains "," $type }}
{{- fail (printf "stageTypes: %q names several stage types; give each its own entry (its queue and scaling are its own)" $type) }}
{{- end }}
{{- $s := deepCopy $root.Values.defaults }}
{{- range $key, $value := omit $stage "name" "resourceName" "image" "env" "keda" }}
{{- $_ := set $s $key $value }}
{{- end }}
{{- $suffix := $stage.resourceName | default (regexReplaceAll "[^a-z0-9-]+" ($type | lower) "-" | trimAll "-") }}
{{- if not $suffix }}
{{- fail (printf "stageTypes: %q gives no usable resource name; set resourceName" $type) }}
{{- end }}
{{- $_ := set $s "stageType" $type }}
{{- $_ := set $s "resourceName" (printf "%s-%s" (include "jobnik-worker.fullname" $root) $suffix | trunc 63 | trimSuffix "-") }}
{{- $_ := set $s "queueName" (printf "jobnik.tasks.%s" $type) }}
{{- $_ := set $s "image" (merge (deepCopy ($stage.image | default dict)) (deepCopy $root.Values.image)) }}
{{- $_ := set $s "env" (concat ($root.Values.defaults.env | default list) ($stage.env | default list)) }}
{{- $keda := deepCopy $root.Values.keda.defaults }}
{{- range $key, $value := ($stage.keda | default dict) }}
{{- $_ := set $keda $key $value }}
{{- end }}
{{- $stageKedaOff := and (hasKey ($stage.keda | default dict) "enabled") (not $stage.keda.enabled) }}
{{- $_ := set $keda "enabled" (and $root.Values.keda.enabled (not $stageKedaOff)) }}
{{- $_ := set $s "keda" $keda }}
{{- if le (float64 $s.terminationGracePeriodSeconds) (float64 $s.shutdownGraceSeconds) }}
{{- fail (printf "stageTypes %q: terminationGracePeriodSeconds (%v) must exceed shutdownGraceSeconds (%v), or stopping workers are killed before they report their tasks" $type $s.terminationGracePeriodSeconds $s.shutdownGraceSeconds) }}
{{- end }}
{{- toYaml $s }}
{{- end }}

{{/* Fails on two stageTypes entries with the same stage type or resource name. */}}
{{- define "jobnik-worker.checkStageTypes" -}}
{{- if not .Values.stageTypes }}
{{- fail "stageTypes is empty: list at least one stage type" }}
{{- end }}
{{- $types := dict }}
{{- $names := dict }}
{{- range .Values.stageTypes }}
{{- $s := include "jobnik-worker.stage" (dict "root" $ "stage" .) | fromYaml }}
{{- if hasKey $types $s.stageType }}
{{- fail (printf "stageTypes: %q is listed twice" $s.stageType) }}
{{- end }}
{{- if hasKey $names $s.resourceName }}
{{- fail (printf "stageTypes: two entries are both named %q; set resourceName on one" $s.resourceName) }}
{{- end }}
{{- $_ := set $types $s.stageType true }}
{{- $_ := set $names $s.resourceName true }}
{{- end }}
{{- end }}
