/*
 * prealloc.h: the fatprealloc operation.  Every request is resolved and
 * every cluster planned in memory first; the first write comes only after
 * all of them passed, so a refusal leaves the image byte-for-byte as it
 * was.  Commit follows the write order fatprealloc(1) documents: new
 * chains on every FAT copy, then links, then directory entries, FSInfo
 * last.
 */
#ifndef FATKIT_PREALLOC_H
#define FATKIT_PREALLOC_H

#include <stddef.h>

#include "iface/prealloc-types.h"

struct fk_diag;
struct fk_volume;

/*
 * Carry out @n requests on @vol (opened for writing unless dry_run).
 * Returns 0, or -errno with @diag naming the path: -ENOENT (missing parent
 * without -p), -ENOTDIR, -EISDIR, -EFBIG, -EINVAL (bad name), -ENOSPC
 * (need and free in @diag), FK_ECORRUPT (damage, on exFAT also an
 * up-case table that does not fold a-z, a bitmap DataLength other than
 * the cluster count needs, or a cluster in use that the bitmap marks
 * free), -EOPNOTSUPP (an option or layout the exFAT side
 * cannot express or write: -n, a fragmented bitmap, TexFAT with its
 * second FAT active).  Every refusal comes before the first write.  On
 * exFAT, exfat-prealloc.c writes in exFAT's order (VolumeDirty, FAT chains
 * of fragmented files, bitmap, zeros, entry sets, then PercentInUse and
 * VolumeDirty cleared in one write).  @res is filled either way; free it with
 * fk_prealloc_result_free().
 *
 * -EINTR: *@opts->stop was set.  The run stops at the next safe point:
 * between chains, between zeroing chunks of at most FK_ZERO_CHUNK bytes,
 * and with per_cluster between two clusters.  Before the commit point
 * (the first link or directory-entry write) every cluster the run took is
 * freed again in every FAT copy, so the FAT, the directories and FSInfo
 * are as they were (only data may differ: clusters that were free and
 * still are, and the slack of a grown file's last cluster past its size,
 * which zeroing reached); @diag says `interrupted; nothing was changed`.
 * From the commit point on, the few metadata writes left are finished and
 * @diag says the run was completed.  A per_cluster run stopped after its
 * first cluster keeps the clusters taken: the file being served ends
 * where its chain does, later files keep their sizes (new ones are
 * created empty), the rest of the plan stays free (FSInfo, the exFAT
 * bitmap and PercentInUse say so), and @diag says `interrupted; PATH got
 * N of its M new clusters[, K more files none]; run again to finish`.
 * In every case @diag names IMAGE.
 */
int fk_prealloc(struct fk_volume *vol, const struct fk_prealloc_req *reqs,
		size_t n, const struct fk_prealloc_opts *opts,
		struct fk_prealloc_result *res, struct fk_diag *diag);
void fk_prealloc_result_free(struct fk_prealloc_result *res);

#endif
