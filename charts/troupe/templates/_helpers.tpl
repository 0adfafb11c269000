{{/*
Names. Every object is named after the release (troupe.fullname), with the
component (operator, scheduler) as a suffix, so that two releases in one
cluster never share a cluster-scoped name.
*/}}
{{- define "troupe.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "troupe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "troupe.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "troupe.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The component suffixes are short, so that the names stay within 63 characters. */}}
{{- define "troupe.operator.fullname" -}}
{{- printf "%s-operator" (include "troupe.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{- define "troupe.scheduler.fullname" -}}
{{- printf "%s-scheduler" (include "troupe.fullname" . | trunc 53 | trimSuffix "-") }}
{{- end }}

{{/*
Which components the release runs: the operator always; the scheduler only
for backend troupe (Volcano and scheduler-plugins bring their own).
hack/chartgen gates each component's generated RBAC on these.
*/}}
{{- define "troupe.operator.enabled" -}}
true
{{- end }}

{{- define "troupe.scheduler.enabled" -}}
{{- if eq .Values.backend "troupe" }}true{{ end }}
{{- end }}

{{/*
The operator's --gang-scheduler-name for the backend. With scheduler-plugins
and a coschedulingSchedulerName, it is that name: the operator takes any name
other than its known backends for a coscheduling-compatible scheduler's.
*/}}
{{- define "troupe.gangSchedulerName" -}}
{{- if and (eq .Values.backend "scheduler-plugins") .Values.coschedulingSchedulerName }}
{{- .Values.coschedulingSchedulerName }}
{{- else }}
{{- .Values.backend }}
{{- end }}
{{- end }}

{{- define "troupe.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "troupe.labels" -}}
helm.sh/chart: {{ include "troupe.chart" . }}
app.kubernetes.io/name: {{ include "troupe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: troupe
{{- end }}

{{/* Selector labels of a component: (list $ "operator"). */}}
{{- define "troupe.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "troupe.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "troupe.componentLabels" -}}
{{ include "troupe.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/*
Annotations of the CRDs: with crds.keep, `helm uninstall` leaves them, and
so every job in the cluster, in place.
*/}}
{{- define "troupe.crdAnnotations" -}}
{{- if .Values.crds.keep -}}
helm.sh/resource-policy: keep
{{- end }}
{{- end }}

{{- define "troupe.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}
