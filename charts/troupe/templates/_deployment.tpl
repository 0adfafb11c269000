{{- /*
The Deployment of a component; both binaries are controller-runtime managers
with the same endpoints, flags for them, and needs. Takes a dict:
  root       the chart's top-level context ($)
  component  operator | scheduler (the binary is /<component> in the image)
  values     the component's values (.Values.<component>)
  args       the component's own flags
  ports      the container's metrics and health ports: dict "metrics" N "health" N
  config     optional: the content of the component's ConfigMap, mounted
             read-only at /etc/troupe; its checksum rolls the pods on change
*/ -}}
{{- define "troupe.deployment" -}}
{{- $root := .root }}
{{- $v := .values }}
{{- $name := include (printf "troupe.%s.fullname" .component) $root }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "troupe.componentLabels" (list $root .component) | nindent 4 }}
spec:
  replicas: {{ int $v.replicas }}
  selector:
    matchLabels:
      {{- include "troupe.selectorLabels" (list $root .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "troupe.componentLabels" (list $root .component) | nindent 8 }}
      {{- if or $v.podAnnotations .config }}
      annotations:
        {{- if .config }}
        checksum/config: {{ .config | sha256sum }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
    spec:
      serviceAccountName: {{ $name }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: 30
      containers:
        - name: {{ .component }}
          image: {{ include "troupe.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [/{{ .component }}]
          args:
            - --metrics-bind-address=:{{ .ports.metrics }}
            - --health-probe-bind-address=:{{ .ports.health }}
            - --leader-elect={{ $v.leaderElection.enabled }}
            - --kube-api-qps={{ $v.kubeAPI.qps }}
            - --kube-api-burst={{ int $v.kubeAPI.burst }}
            - --zap-log-level={{ $v.logLevel }}
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
          ports:
            - name: metrics
              containerPort: {{ .ports.metrics }}
              protocol: TCP
            - name: health
              containerPort: {{ .ports.health }}
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          {{- if .config }}
          volumeMounts:
            - name: config
              mountPath: /etc/troupe
              readOnly: true
          {{- end }}
      {{- if .config }}
      volumes:
        - name: config
          configMap:
            name: {{ $name }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
