/*
 * spank_baton: runs every task of a job step under Baton.
 *
 * In each task's environment it sets LD_PRELOAD (the interposer first), BATON_SCHEDULER=global,
 * BATON_SOCKET and BATON_PRIORITY. The priority is the job's --gpu-priority=N, else the
 * priority plugstack.conf gives the job's QoS (qos:NAME=N), else the site default; never above
 * the site cap. The daemon on the node (`baton daemon --system`) caps what a task may claim
 * afterwards with --max-priority, so the cap here and the daemon's should agree.
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/slurm/spank_baton.so default=0 max=50 \
 *       qos:high=50 qos:normal=0 qos:scavenger=-50 \
 *       interposer=/var/lib/baton/lib/libbaton_interposer.so socket=/run/baton/baton.sock
 *
 * Build: cc -shared -fPIC -o spank_baton.so spank_baton.c (needs slurm/spank.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <slurm/spank.h>

SPANK_PLUGIN(baton, 1);

#define MAX_QOS 32

static int site_default = 0;
static int site_max = 100;
static int asked = 0, asked_set = 0;
static const char *interposer = "/var/lib/baton/lib/libbaton_interposer.so";
static const char *socket_path = "/run/baton/baton.sock";
static struct { char name[64]; int priority; } qos[MAX_QOS];
static int n_qos = 0;

static int parse_priority(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < -100 || v > 100)
		return -1;
	*out = (int)v;
	return 0;
}

static int gpu_priority_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (optarg == NULL || parse_priority(optarg, &asked) != 0) {
		slurm_error("baton: --gpu-priority takes an integer from -100 to 100");
		return -1;
	}
	asked_set = 1;
	return 0;
}

/* Registered from slurm_spank_init in every context: an exported spank_options table reaches
 * srun and slurmstepd only, so sbatch and salloc would refuse the option. */
static struct spank_option gpu_priority_option = {
	"gpu-priority", "N", "Baton priority of the job's GPU work (-100..100; capped by the site)",
	1, 0, (spank_opt_cb_f)gpu_priority_cb
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (spank_option_register(sp, &gpu_priority_option) != ESPANK_SUCCESS) {
		slurm_error("baton: could not register --gpu-priority");
		return -1;
	}
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		int bad = 0;
		if (strncmp(a, "default=", 8) == 0)
			bad = parse_priority(a + 8, &site_default);
		else if (strncmp(a, "max=", 4) == 0)
			bad = parse_priority(a + 4, &site_max);
		else if (strncmp(a, "interposer=", 11) == 0)
			interposer = a + 11;
		else if (strncmp(a, "socket=", 7) == 0)
			socket_path = a + 7;
		else if (strncmp(a, "qos:", 4) == 0 && strchr(a, '=') != NULL && n_qos < MAX_QOS) {
			const char *eq = strchr(a, '=');
			size_t n = (size_t)(eq - (a + 4));
			if (n == 0 || n >= sizeof qos[0].name)
				bad = 1;
			else {
				memcpy(qos[n_qos].name, a + 4, n);
				qos[n_qos].name[n] = '\0';
				bad = parse_priority(eq + 1, &qos[n_qos].priority);
				n_qos += !bad;
			}
		} else
			bad = 1;
		if (bad) {
			slurm_error("baton: plugstack.conf argument '%s' not understood", a);
			return -1;
		}
	}
	return 0;
}

/* The job's QoS, as the step's environment names it. */
static int qos_priority(spank_t sp, int *out)
{
	char name[64];
	if (spank_getenv(sp, "SLURM_JOB_QOS", name, sizeof name) != ESPANK_SUCCESS)
		return -1;
	for (int i = 0; i < n_qos; i++)
		if (strcmp(qos[i].name, name) == 0) {
			*out = qos[i].priority;
			return 0;
		}
	return -1;
}

/* Whether the LD_PRELOAD list `list` (separated by colons or spaces) names `lib`. */
static int preloads(const char *list, const char *lib)
{
	size_t n = strlen(lib);
	for (const char *p = list; (p = strstr(p, lib)) != NULL; p += n) {
		int starts = p == list || p[-1] == ':' || p[-1] == ' ';
		int ends = p[n] == '\0' || p[n] == ':' || p[n] == ' ';
		if (starts && ends)
			return 1;
	}
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	int p = site_default;
	if (asked_set)
		p = asked;
	else
		(void)qos_priority(sp, &p);
	if (p > site_max)
		p = site_max;
	char buf[4096], value[16];
	if (spank_getenv(sp, "LD_PRELOAD", buf, sizeof buf) == ESPANK_SUCCESS && buf[0] != '\0') {
		/* An srun inside a batch job inherits the batch task's LD_PRELOAD: keep it as is,
		 * rather than naming the interposer once more for every nested step. */
		if (!preloads(buf, interposer)) {
			char joined[4096 + 512];
			snprintf(joined, sizeof joined, "%s:%s", interposer, buf);
			spank_setenv(sp, "LD_PRELOAD", joined, 1);
		}
	} else
		spank_setenv(sp, "LD_PRELOAD", interposer, 1);
	spank_setenv(sp, "BATON_SCHEDULER", "global", 1);
	spank_setenv(sp, "BATON_SOCKET", socket_path, 1);
	snprintf(value, sizeof value, "%d", p);
	spank_setenv(sp, "BATON_PRIORITY", value, 1);
	return 0;
}
