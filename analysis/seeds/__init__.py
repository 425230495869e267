"""The seed mails (kernel mailing-list threads) recomputed by mmlab's own code: every derived
figure they print (``checks``) and seed 000's throttle histograms fitted (``throttle``),
from the mail text; seed 000's mail is package data, so an installed mmlab needs no
repository."""
