function c(o){return o&&o.source?o.source:o}export{c as a};
