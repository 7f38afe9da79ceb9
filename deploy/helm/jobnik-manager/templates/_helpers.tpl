{{/* Names, labels and the Secret references shared by the templates. */}}

{{- define "jobnik-manager.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The base name of every object: the release name, followed by the chart's name
unless the release name already contains it (`helm install jobnik-manager ...`
gives plain "jobnik-manager").
*/}}
{{- define "jobnik-manager.fullname" -}}
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

{{- define "jobnik-manager.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jobnik-manager.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jobnik-manager.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The server's pods. The component label keeps the migration Job's pod out of
the Service and the Deployment's selector.
*/}}
{{- define "jobnik-manager.serverSelectorLabels" -}}
{{ include "jobnik-manager.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "jobnik-manager.labels" -}}
helm.sh/chart: {{ include "jobnik-manager.chart" . }}
{{ include "jobnik-manager.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jobnik
{{- end }}

{{- define "jobnik-manager.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The Secret the chart creates for the URLs given as values. */}}
{{- define "jobnik-manager.secretName" -}}
{{- include "jobnik-manager.fullname" . }}
{{- end }}

{{/* True (non-empty) when the chart has to create its Secret. */}}
{{- define "jobnik-manager.createSecret" -}}
{{- if or (not .Values.database.existingSecret) (and .Values.amqp.url (not .Values.amqp.existingSecret)) }}true{{ end }}
{{- end }}

{{/* Where JOBNIK_DATABASE_URL comes from: a secretKeyRef. */}}
{{- define "jobnik-manager.databaseUrlRef" -}}
{{- if .Values.database.existingSecret }}
name: {{ .Values.database.existingSecret }}
key: {{ .Values.database.existingSecretKey }}
{{- else }}
{{- if not .Values.database.url }}
{{- fail "set database.url (postgresql+asyncpg://USER:PASSWORD@HOST:5432/DB) or database.existingSecret" }}
{{- end }}
name: {{ include "jobnik-manager.secretName" . }}
key: database-url
{{- end }}
{{- end }}

{{/* True (non-empty) when the manager is given an AMQP URL. */}}
{{- define "jobnik-manager.amqpEnabled" -}}
{{- if or .Values.amqp.url .Values.amqp.existingSecret }}true{{ end }}
{{- end }}

{{/* Where JOBNIK_AMQP_URL comes from: a secretKeyRef. */}}
{{- define "jobnik-manager.amqpUrlRef" -}}
{{- if .Values.amqp.existingSecret }}
name: {{ .Values.amqp.existingSecret }}
key: {{ .Values.amqp.existingSecretKey }}
{{- else }}
name: {{ include "jobnik-manager.secretName" . }}
key: amqp-url
{{- end }}
{{- end }}

{{/*
Environment shared by the server and the migration Job. Kubernetes' own
service variables are switched off in the pods (enableServiceLinks: false):
a Service named "jobnik" would otherwise inject JOBNIK_PORT=tcp://..., which
the manager would read as its port.
*/}}
{{- define "jobnik-manager.env" -}}
- name: JOBNIK_DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- include "jobnik-manager.databaseUrlRef" . | trim | nindent 6 }}
{{- if include "jobnik-manager.amqpEnabled" . }}
- name: JOBNIK_AMQP_URL
  valueFrom:
    secretKeyRef:
      {{- include "jobnik-manager.amqpUrlRef" . | trim | nindent 6 }}
{{- end }}
- name: JOBNIK_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: JOBNIK_DB_POOL_SIZE
  value: {{ .Values.database.poolSize | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
