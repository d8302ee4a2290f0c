package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// routes is the whole API. openapi.yaml documents exactly these (a test checks
// both ways), and each route's Role is the least role that may call it.
func (s *Server) routes() []route {
	const (
		public     = domain.Role("")
		user       = domain.RoleUser
		admin      = domain.RoleAdmin
		superadmin = domain.RoleSuperadmin
	)
	return []route{
		{http.MethodGet, "/v1/status", public, s.getStatus},
		{http.MethodGet, "/v1/openapi.json", public, s.getOpenAPI},
		{http.MethodGet, "/v1/me", user, s.getMe},
		{http.MethodGet, "/v1/signin", public, s.listSignIn},
		{http.MethodPost, "/v1/signin/token", public, s.signInToken},

		{http.MethodGet, "/v1/tenants", superadmin, s.listTenants},
		{http.MethodPost, "/v1/tenants", superadmin, s.createTenant},
		{http.MethodGet, "/v1/tenants/{tenant}", user, s.getTenant},
		// Tenant routes check visibility (404 for another tenant) before the
		// superadmin role, so ids of other tenants cannot be probed.
		{http.MethodPut, "/v1/tenants/{tenant}", user, s.updateTenant},
		{http.MethodDelete, "/v1/tenants/{tenant}", user, s.deleteTenant},

		{http.MethodGet, "/v1/users", admin, s.listUsers},
		{http.MethodPost, "/v1/users", admin, s.createUser},
		{http.MethodGet, "/v1/users/{user}", user, s.getUser},
		{http.MethodPut, "/v1/users/{user}", admin, s.setUserRole},
		{http.MethodDelete, "/v1/users/{user}", admin, s.deleteUser},
		{http.MethodGet, "/v1/users/{user}/keys", user, s.listKeys},
		{http.MethodPost, "/v1/users/{user}/keys", user, s.createKey},
		{http.MethodDelete, "/v1/users/{user}/keys/{key}", user, s.deleteKey},

		{http.MethodGet, "/v1/issuers", admin, s.listIssuers},
		{http.MethodPost, "/v1/issuers", admin, s.createIssuer},
		{http.MethodGet, "/v1/issuers/{issuer}", admin, s.getIssuer},
		{http.MethodPut, "/v1/issuers/{issuer}", admin, s.updateIssuer},
		{http.MethodDelete, "/v1/issuers/{issuer}", admin, s.deleteIssuer},

		{http.MethodGet, "/v1/clusters", user, s.listClusters},
		{http.MethodPost, "/v1/clusters", user, s.createCluster},
		{http.MethodGet, "/v1/clusters/{cluster}", user, s.getCluster},
		{http.MethodGet, "/v1/clusters/{cluster}/nodes", user, s.listNodes},
		{http.MethodDelete, "/v1/clusters/{cluster}", user, s.deleteCluster},
		{http.MethodPost, "/v1/clusters/{cluster}/expand", user, mutation(s, (*cluster.Service).Expand)},
		{http.MethodPost, "/v1/clusters/{cluster}/shrink", user, mutation(s, (*cluster.Service).Shrink)},
		{http.MethodPost, "/v1/clusters/{cluster}/reconfigure", user, mutation(s, (*cluster.Service).Reconfigure)},
		{http.MethodPost, "/v1/clusters/{cluster}/add-services", user, mutation(s, (*cluster.Service).AddServices)},
		{http.MethodPost, "/v1/clusters/{cluster}/remove-services", user, mutation(s, (*cluster.Service).RemoveServices)},
		{http.MethodPost, "/v1/clusters/{cluster}/sync", user, mutation(s, (*cluster.Service).SyncTemplate)},
		{http.MethodPost, "/v1/clusters/{cluster}/start", user, s.serviceAction(domain.OpStartServices)},
		{http.MethodPost, "/v1/clusters/{cluster}/stop", user, s.serviceAction(domain.OpStopServices)},
		{http.MethodPost, "/v1/clusters/{cluster}/restart", user, s.serviceAction(domain.OpRestartServices)},
		{http.MethodPost, "/v1/clusters/{cluster}/rolling-restart", user, s.serviceAction(domain.OpRollingRestart)},
		{http.MethodPost, "/v1/clusters/{cluster}/lease", user, s.extendLease},
		{http.MethodPost, "/v1/clusters/{cluster}/managed-by", user, s.setManagedBy},
		{http.MethodPost, "/v1/clusters/{cluster}/verify", user, s.verifyCluster},
		{http.MethodPost, "/v1/clusters/{cluster}/drift", user, s.driftCluster},
		{http.MethodPost, "/v1/clusters/{cluster}/repair", user, mutation(s, (*cluster.Service).Repair)},
		{http.MethodGet, "/v1/clusters/{cluster}/revisions", user, s.listRevisions},
		{http.MethodGet, "/v1/clusters/{cluster}/revisions/{revision}", user, s.getRevision},
		{http.MethodPost, "/v1/clusters/{cluster}/rollback", user, mutation(s, (*cluster.Service).Rollback)},
		{http.MethodGet, "/v1/clusters/{cluster}/autoscale", user, s.getAutoscale},
		{http.MethodPut, "/v1/clusters/{cluster}/autoscale", user, s.putAutoscale},
		{http.MethodPost, "/v1/clusters/{cluster}/metrics", user, s.pushMetrics},
		{http.MethodGet, "/v1/clusters/{cluster}/events", user, s.listEvents},
		{http.MethodGet, "/v1/clusters/{cluster}/jobs", user, s.listJobs},
		{http.MethodGet, "/v1/clusters/{cluster}/jobs/{job}", user, s.getJob},
		{http.MethodGet, "/v1/clusters/{cluster}/jobs/{job}/tasks", user, s.listTasks},
		{http.MethodGet, "/v1/clusters/{cluster}/jobs/{job}/tasks/{task}", user, s.getTask},
		{http.MethodGet, "/v1/clusters/{cluster}/jobs/{job}/graph", user, s.getJobGraph},
		{http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/abort", user, s.controlJob(cluster.JobAbort)},
		{http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/pause", user, s.controlJob(cluster.JobPause)},
		{http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/resume", user, s.controlJob(cluster.JobResume)},
		{http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/retry", user, s.controlJob(cluster.JobRetry)},

		{http.MethodGet, "/v1/audit", admin, s.listAudit},
		{http.MethodGet, "/v1/webhooks", admin, s.listWebhooks},
		{http.MethodPost, "/v1/webhooks", admin, s.createWebhook},
		{http.MethodGet, "/v1/webhooks/{webhook}", admin, s.getWebhook},
		{http.MethodDelete, "/v1/webhooks/{webhook}", admin, s.deleteWebhook},
		{http.MethodGet, "/v1/webhooks/{webhook}/deliveries", admin, s.listDeliveries},
		{http.MethodGet, "/v1/metrics", superadmin, s.getMetrics},
		{http.MethodGet, "/v1/backup", superadmin, s.getBackup},
		{http.MethodGet, "/v1/tenant/export", admin, s.getTenantExport},
		{http.MethodPost, "/v1/tenant/import", admin, s.postTenantImport},
		{http.MethodGet, "/v1/usage", user, s.getUsage},

		{http.MethodGet, "/v1/catalog", admin, s.exportCatalog},
		{http.MethodPost, "/v1/catalog", admin, s.importCatalog},
		{http.MethodGet, "/v1/clustertemplates/{name}/resolved", user, s.resolveTemplate},
		{http.MethodGet, "/v1/providertypes", user, s.listProviderTypes},
		{http.MethodGet, "/v1/providers/{provider}/hosts", admin, s.listHosts},
		{http.MethodPost, "/v1/providers/{provider}/hosts", admin, s.registerHosts},
		{http.MethodGet, "/v1/providers/{provider}/hosts/{host}", admin, s.hostAction(getHost)},
		{http.MethodDelete, "/v1/providers/{provider}/hosts/{host}", admin, s.hostAction(removeHost)},
		{http.MethodPost, "/v1/providers/{provider}/hosts/{host}/drain", admin, s.hostAction(drainHost)},
		{http.MethodPost, "/v1/providers/{provider}/hosts/{host}/readmit", admin, s.hostAction(readmitHost)},
		{http.MethodGet, "/v1/{kind}", user, s.listEntities},
		{http.MethodGet, "/v1/{kind}/{name}", user, s.getEntity},
		{http.MethodPut, "/v1/{kind}/{name}", admin, s.putEntity},
		{http.MethodDelete, "/v1/{kind}/{name}", admin, s.deleteEntity},
		{http.MethodGet, "/v1/{kind}/{name}/versions", user, s.listVersions},
		{http.MethodGet, "/v1/{kind}/{name}/versions/{version}", user, s.getVersion},
	}
}
