import{a,b,c,d}from"./chunk-KRMAV64I.js";import"./chunk-TXLZR6DU.js";import"./chunk-4AC2DFDM.js";export{a as FeatureFlags,d as describeFilter,b as isMultivariate,c as releaseSummary};
