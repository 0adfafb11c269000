package differential

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "github.com/troupe-ml/troupe/gangscheduler/api/testing"
)

// storage is a case's volumes in local names: claims in the case's
// namespace; volumes, classes and CSINodes (named after their node)
// cluster-wide, so their names get the case's prefix.
type storage struct {
	claims   []*corev1.PersistentVolumeClaim
	volumes  []*corev1.PersistentVolume
	classes  []*storagev1.StorageClass
	csiNodes []*storagev1.CSINode
}

// pvcProtection is the finalizer the API server's admission puts on a
// claim, and what keeps a deleted claim "being deleted" here, where no
// controller removes it.
const pvcProtection = "kubernetes.io/pvc-protection"

// createStorage creates the case's storage objects under their real names,
// as the PV controller and the CSI node plugin would leave them (envtest
// runs neither): volumes and claims already bound (their status written
// through the status subresource), a claim marked terminating deleted
// behind a finalizer, CSINodes for the case's nodes. It registers their
// removal and returns what the checker reads.
func (r *run) createStorage(ctx context.Context, s storage) {
	for _, c := range s.classes {
		c = c.DeepCopy()
		c.Name = r.prefix + c.Name
		r.create(ctx, c)
		r.state.StorageClasses = append(r.state.StorageClasses, c)
	}
	for _, v := range s.volumes {
		v = r.localizeVolume(v)
		status := v.Status
		r.create(ctx, v)
		r.writeStatus(ctx, v, func() { v.Status = status })
		r.state.PersistentVolumes = append(r.state.PersistentVolumes, v)
	}
	for _, c := range s.claims {
		c = c.DeepCopy()
		c.Namespace, c.UID = r.ns, ""
		if c.Spec.VolumeName != "" {
			c.Spec.VolumeName = r.prefix + c.Spec.VolumeName
		}
		if c.Spec.StorageClassName != nil {
			c.Spec.StorageClassName = ptrTo(r.prefix + *c.Spec.StorageClassName)
		} else {
			// No class at all, not the cluster's default one.
			c.Spec.StorageClassName = ptrTo("")
		}
		terminating, status := c.DeletionTimestamp != nil, c.Status
		c.DeletionTimestamp = nil
		if terminating {
			c.Finalizers = append(c.Finalizers, pvcProtection)
		}
		r.create(ctx, c)
		r.writeStatus(ctx, c, func() { c.Status = status })
		if terminating {
			Expect(suite.Client.Delete(ctx, c)).To(Succeed())
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		}
		r.state.Claims = append(r.state.Claims, c)
	}
	for _, n := range s.csiNodes {
		n = n.DeepCopy()
		n.Name = r.nodeName(n.Name)
		for i := range n.Spec.Drivers {
			n.Spec.Drivers[i].NodeID = n.Name
		}
		r.create(ctx, n)
		r.state.CSINodes = append(r.state.CSINodes, n)
	}
}

// localizeVolume gives a volume its real names: its own, its class's, its
// claim's namespace, and the nodes its node affinity names by hostname.
func (r *run) localizeVolume(v *corev1.PersistentVolume) *corev1.PersistentVolume {
	v = v.DeepCopy()
	v.Name, v.UID = r.prefix+v.Name, ""
	if v.Spec.StorageClassName != "" {
		v.Spec.StorageClassName = r.prefix + v.Spec.StorageClassName
	}
	if ref := v.Spec.ClaimRef; ref != nil {
		ref.Namespace = r.ns
	}
	if na := v.Spec.NodeAffinity; na != nil && na.Required != nil {
		for i := range na.Required.NodeSelectorTerms {
			for j := range na.Required.NodeSelectorTerms[i].MatchExpressions {
				req := &na.Required.NodeSelectorTerms[i].MatchExpressions[j]
				if req.Key == host {
					for k, name := range req.Values {
						req.Values[k] = r.nodeName(name)
					}
				}
			}
		}
	}
	return v
}

// create creates obj and removes it when the case ends, finalizers
// first: the API server's admission puts pvc-protection and pv-protection
// on claims and volumes, and no controller here would take them off.
func (r *run) create(ctx context.Context, obj client.Object) {
	ExpectWithOffset(1, suite.Client.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil || len(obj.GetFinalizers()) == 0 {
				return err
			}
			obj.SetFinalizers(nil)
			return suite.Client.Update(ctx, obj)
		}))).To(Succeed())
		Expect(client.IgnoreNotFound(suite.Client.Delete(ctx, obj))).To(Succeed())
	})
}

// writeStatus sets obj's status with set, through the status subresource.
func (r *run) writeStatus(ctx context.Context, obj client.Object, set func()) {
	ExpectWithOffset(1, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		set()
		return suite.Client.Status().Update(ctx, obj)
	})).To(Succeed())
}

// describeStorage lists the case's claims and volumes for a failure's
// report.
func (r *run) describeStorage() string {
	if len(r.state.Claims)+len(r.state.PersistentVolumes)+len(r.state.CSINodes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("storage:\n")
	for _, c := range r.state.Claims {
		fmt.Fprintf(&b, "  claim %s: volume %s, phase %s, modes %v, annotations %v, terminating %v\n",
			c.Name, strings.TrimPrefix(c.Spec.VolumeName, r.prefix), c.Status.Phase, c.Spec.AccessModes, c.Annotations, c.DeletionTimestamp != nil)
	}
	for _, v := range r.state.PersistentVolumes {
		fmt.Fprintf(&b, "  volume %s: labels %v, node affinity %v, csi %v\n", strings.TrimPrefix(v.Name, r.prefix), v.Labels, v.Spec.NodeAffinity, v.Spec.CSI)
	}
	for _, n := range r.state.CSINodes {
		fmt.Fprintf(&b, "  CSINode %s: %v\n", r.shortNode(n.Name), n.Spec.Drivers)
	}
	return b.String()
}

func ptrTo[T any](v T) *T { return &v }

// Builders for the volume cases, in local names (the scheduler's own test
// builders for the objects: plain Kubernetes values).

const csiDriver = "csi.example.com"

// csiVolume is a volume of the case's CSI driver bound to the claim of the
// same name.
func csiVolume(name string) *st.PVWrapper {
	return st.MakePV(name).CSI(csiDriver, "h-"+name).ClaimRef("", name)
}

// boundClaim is a claim bound to the volume of the same name.
func boundClaim(name string) *st.PVCWrapper { return st.MakePVC("", name).BoundTo(name) }
