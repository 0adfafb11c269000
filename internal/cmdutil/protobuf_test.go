package cmdutil

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestProtobuf checks what a clientset made from Protobuf's config puts on
// the wire for a bind (the null binder's one write): a protobuf body, and
// protobuf asked for first; and that the caller's config is left as it was.
func TestProtobuf(t *testing.T) {
	var (
		mu                  sync.Mutex
		contentType, accept string
	)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		contentType, accept = r.Header.Get("Content-Type"), r.Header.Get("Accept")
		mu.Unlock()
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer server.Close()

	for _, tc := range []struct {
		name                        string
		cfg                         func(*rest.Config) *rest.Config
		wantContentType, wantAccept string
	}{
		{name: "client-go's default", cfg: rest.CopyConfig, wantContentType: runtime.ContentTypeJSON, wantAccept: runtime.ContentTypeJSON + ", */*"},
		{name: "Protobuf", cfg: Protobuf, wantContentType: runtime.ContentTypeProtobuf, wantAccept: BuiltinContentTypes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := &rest.Config{Host: server.URL}
			cs, err := kubernetes.NewForConfig(tc.cfg(base))
			if err != nil {
				t.Fatal(err)
			}
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}
			if err := cs.CoreV1().Pods("ns").Bind(context.Background(), binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if contentType != tc.wantContentType || accept != tc.wantAccept {
				t.Errorf("Content-Type %q, Accept %q; want %q, %q", contentType, accept, tc.wantContentType, tc.wantAccept)
			}
			if base.ContentType != "" || base.AcceptContentTypes != "" {
				t.Errorf("the caller's config changed: %q, %q", base.ContentType, base.AcceptContentTypes)
			}
		})
	}
}
