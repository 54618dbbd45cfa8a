/*
 * check.h: the checker.  Its phases read a volume and produce findings as
 * data (severity, code, path, message); while checking it plans the safe
 * repairs, which explicit steps then apply in each family's crash-safe
 * write order: on FAT, FAT copies, FAT entries (flushed), directory
 * entries, boot sector, FSInfo last; on exFAT, VolumeDirty set first and
 * cleared last around the FAT, bitmap and entry-set writes (the order is
 * in check-exfat.c).  Nothing here prints or exits.
 *
 * Memory is bounded by the volume: two bits per cluster, one directory
 * block per level of nesting, and lists that grow only with damage or
 * with preallocated tails.
 */
#ifndef FATKIT_CHECK_H
#define FATKIT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "iface/findings.h"

struct fk_check;
struct fk_diag;
struct fk_dirent;
struct fk_volume;

struct fk_volume_opts;

/*
 * Open the volume to check: as fk_volume_open(), except that an exFAT
 * volume whose main boot region is damaged (beyond PercentInUse and the
 * backup's own state) or does not open at all is opened through its
 * backup region when that one is sound, so the check sees the volume
 * that a repair restores.  Returns as fk_volume_open().
 */
int fk_check_open(const struct fk_volume_opts *opts, struct fk_volume **out,
		  struct fk_diag *diag);

/*
 * Set up a check of @vol (which the caller keeps open until
 * fk_check_free()) by the checker of the family it was opened as.
 * *@out is the caller's.  Returns 0, -ENOMEM, or -EOPNOTSUPP for a
 * family without a checker.
 */
int fk_check_new(struct fk_volume *vol, const struct fk_check_opts *opts,
		 struct fk_check **out);
void fk_check_free(struct fk_check *ck);

/*
 * Run every phase, reading only: the layout (fk_fat_judge_layout(): one
 * that does not hold together is FK_ECORRUPT, nothing checked or
 * planned), boot sector and backup, FAT copies and
 * reserved entries (one pass over each copy), FSInfo, the directory tree
 * with every chain, preallocated tails, lost clusters.  Returns 0 (the
 * findings say what was found), or an error that stopped the check:
 * -errno, or FK_ECORRUPT for a volume too hostile to check (a directory
 * over 65536 entries, nesting past FK_CHECK_MAX_DEPTH); @diag says which.
 */
int fk_check_run(struct fk_check *ck, struct fk_diag *diag);

/*
 * Apply every repair fk_check_run() planned, in this order, then fsync.
 * The volume must have been opened as a writer.
 *   fat_copies: where the copies differ, copy each run of sectors from
 *               the copy kept there over the other (only the sectors
 *               that differ, so sparse images stay sparse);
 *   fat:        mend FAT[0] and FAT[1], end chains at loops,
 *               cross-links, bad links and where trimmed tails begin;
 *               flushed, so every copy has it before an entry changes;
 *   entries:    sizes, first clusters, "." and "..", entries that alias
 *               another directory removed, names and long-name slots,
 *               end markers before entries hidden past them made
 *               deleted slots, a root label that is not valid removed;
 *   free:       free trimmed tails and lost clusters, which nothing can
 *               reach any more (a crash leaves at worst lost clusters);
 *   salvage:    with --salvage, lost chains (mended by the fat step)
 *               become files in /FOUND.nnn: new directory clusters
 *               chained and written first, then linked, then the entries
 *               in blocks that existed (a crash leaves lost clusters);
 *   boot:       dirty flag, label, backup boot sector;
 *   fsinfo:     free count and next-free hint, last.
 * On success each finding with a fix is marked fixed.  Returns 0 or
 * -errno (@diag says where).
 */
int fk_check_repair(struct fk_check *ck, struct fk_diag *diag);

/* The findings kept, in the order found; borrowed until fk_check_free(). */
const struct fk_finding *fk_check_findings(const struct fk_check *ck,
					   size_t *n);
const struct fk_check_stats *fk_check_stats(const struct fk_check *ck);

#endif
